// The viewer's timeline (issue 13, part 4): the relay opens a journal of
// clothd's --data-dir (a finished recording or the one in progress) and
// shows any of its frames by asking clothd to `replay` it to that frame.
//
// A replay rebuilds the recorded instances under new ids, bit for bit, and
// clothd sends their frames to the relay like any instance's: the pages
// draw them as they draw every instance. Each replay replaces the previous
// one (its instances are destroyed once the new ones stand), and the new
// ones are left disabled (`"enabled":false`), so that a client stepping
// every instance does not carry them past the frame shown. A replay always starts from the
// journal's snapshot (the only one it holds), so going back one frame costs
// as much as going there from the start: about 0.1 ms a frame of a 32 x 32
// cape on clothd's loop.
//
// One timeline per relay, shared by its pages (as the debug flag is). Pages
// send {type:'timeline', action, ...}: 'list' (the journals, answered to
// that page), 'open' {name}, 'seek' {frame}, 'play', 'pause', 'close'.
// Seeks coalesce: while a replay runs, only the newest target is kept, and
// it is replayed next. Every change is broadcast as {type:'timeline', ...}
// (see #state()).
//
// clothd sends every frame a replay steps through; while a replay request
// is out (`replaying`), the relay keeps only the newest frame per instance
// for its pages and sends them once the reply is in (flush()).

const PLAY_MS = 1000 / 30;  // play at most this often a frame
const LIVE_POLL_MS = 1000;  // a recording in progress grows: its length is re-read this often

export class Timeline {
  // host: what the relay lends the timeline: request(cmd, fields) to clothd,
  // broadcast(obj) and send(client, obj) to pages, latest(id) the newest
  // frame (Buffer) clothd sent of an instance, refresh() the instance list,
  // flush() the frames held back while `replaying`.
  constructor(host) {
    this.host = host;
    this.#reset();
  }

  #reset() {
    clearInterval(this.playTimer);
    clearInterval(this.liveTimer);
    this.name = null;
    this.frame = 0;         // the journal frame the replayed instances hold
    this.target = 0;        // the newest frame a page asked for
    this.frames = null;     // the journal's length in steps (null until the first replay)
    this.complete = false;  // it ends with its STOP record
    this.live = false;      // it is the recording in progress
    this.instances = [];    // the current replay's ids
    this.recorded = [];     // the ids they had when recorded (same order)
    this.instanceFrames = {}; // replayed id -> its own frame number (as in its frames)
    this.time = null;       // the simulated time of the first replayed instance
    this.playing = false;
    this.busy = null;       // the replay loop running, if any
    this.error = null;
    this.playTimer = null;
    this.liveTimer = null;
    this.replays = 0;       // replays issued (coalescing shows as fewer replays than seeks)
    this.replaying = false; // a replay request is out
  }

  state() {
    return {
      type: 'timeline',
      open: this.name !== null,
      name: this.name,
      frame: this.frame,
      target: this.target,
      frames: this.frames,
      complete: this.complete,
      live: this.live,
      instances: this.instances,
      recorded: this.recorded,
      instanceFrames: this.instanceFrames,
      time: this.time,
      playing: this.playing,
      pending: this.busy !== null,
      replays: this.replays,
      error: this.error,
    };
  }

  #broadcast() {
    this.host.broadcast(this.state());
  }

  // A message of a page; rejects with a message for that page.
  async onMessage(client, msg) {
    switch (msg.action) {
      case 'list': {
        // Said to the page as a note, not an error: most clothds run without --data-dir.
        let r;
        try {
          r = await this.host.request('journals', {});
        } catch (err) {
          this.host.send(client, { type: 'journals', available: false, journals: [], recording: null, error: err.message });
          return;
        }
        this.host.send(client, { type: 'journals', available: true, journals: r.journals ?? [], recording: r.recording ?? null });
        return;
      }
      case 'open':
        if (typeof msg.name !== 'string' || msg.name === '') throw new Error('timeline: "name" must be a journal name');
        await this.open(msg.name);
        return;
      case 'seek':
        if (!Number.isInteger(msg.frame) || msg.frame < 0) throw new Error('timeline: "frame" must be an integer >= 0');
        this.seek(msg.frame);
        return;
      case 'step':
        if (msg.by !== 1 && msg.by !== -1) throw new Error('timeline: "by" must be 1 or -1');
        this.seek(Math.max(0, this.target + msg.by));
        return;
      case 'play':
        this.play(true);
        return;
      case 'pause':
        this.play(false);
        return;
      case 'close':
        await this.close();
        return;
      default:
        throw new Error(`timeline: unknown action ${JSON.stringify(msg.action ?? null)}`);
    }
  }

  // Opens `name` at frame 0 (the state when the recording started).
  async open(name) {
    if (this.name !== null) await this.close();
    const list = await this.host.request('journals', {});
    if (!(list.journals ?? []).includes(name)) throw new Error(`timeline: no journal "${name}" in clothd's --data-dir`);
    this.name = name;
    this.live = list.recording?.name === name;
    if (this.live) this.frames = list.recording.frames;
    this.target = 0;
    this.liveTimer = setInterval(() => this.#pollLive().catch(() => {}), LIVE_POLL_MS);
    await this.#run(true);
    if (this.error && this.instances.length === 0) {
      const error = this.error;
      await this.close();
      throw new Error(error);
    }
  }

  // Shows `frame` (clamped to the journal's length once it is known).
  seek(frame) {
    if (this.name === null) throw new Error('timeline: no journal is open');
    this.target = this.frames === null ? frame : Math.min(frame, this.frames);
    this.#run(false);
  }

  play(on) {
    if (this.name === null) throw new Error('timeline: no journal is open');
    clearInterval(this.playTimer);
    this.playTimer = null;
    this.playing = on;
    if (on) {
      if (this.frames !== null && this.target >= this.frames && !this.live) this.seek(0); // from the start again
      this.playTimer = setInterval(() => this.#tick(), PLAY_MS);
    }
    this.#broadcast();
  }

  // One frame on while playing, once the previous one is shown; at the end
  // of a finished journal it pauses (a growing one waits for more).
  #tick() {
    if (this.busy || this.name === null) return;
    if (this.frames !== null && this.frame >= this.frames) {
      if (!this.live) this.play(false);
      return;
    }
    this.seek(this.frame + 1);
  }

  async close() {
    const ids = this.instances;
    const busy = this.busy;
    this.#reset();
    this.#broadcast();
    await busy?.catch(() => {});
    await this.#destroy(ids);
  }

  // clothd is gone (or a new one came): nothing of the old replay holds.
  forget() {
    this.#reset();
    this.#broadcast();
  }

  async #destroy(ids) {
    if (ids.length === 0) return;
    await Promise.all(ids.map((id) => this.host.request('destroy', { instance: id }).catch(() => {})));
    this.host.refresh().catch(() => {});
  }

  async #pollLive() {
    if (this.name === null) return;
    const r = await this.host.request('journals', {});
    const live = r.recording?.name === this.name;
    if (live && r.recording.frames !== this.frames) {
      this.frames = r.recording.frames;
      this.live = true;
      this.#broadcast();
    } else if (this.live && !live) {
      this.live = false;        // stopped: the next replay says how long it is
      this.#run(true);
    }
  }

  // Replays until the newest target is shown; one loop at a time (a seek
  // meanwhile only moves the target).
  #run(force) {
    if (this.busy) return this.busy;
    if (!force && this.target === this.frame) return Promise.resolve();
    const name = this.name;
    const loop = (async () => {
      let again = force;
      while (this.name === name && (again || this.target !== this.frame)) {
        again = false;
        await this.#replayOnce(name, this.target);
      }
    })().finally(() => {
      if (this.busy !== loop) return; // forgotten meanwhile: another loop may run
      this.busy = null;
      this.#broadcast();
    });
    this.busy = loop;
    this.#broadcast(); // pending
    return this.busy;
  }

  async #replayOnce(name, to) {
    let r;
    this.replays++;
    this.replaying = true;
    try {
      r = await this.host.request('replay', { name, to, enabled: false });
    } catch (err) {
      this.error = `replay "${name}" to frame ${to}: ${err.message}`;
      this.target = this.frame; // nothing else to try until a page asks
      return;
    } finally {
      this.replaying = false;
      this.host.flush();
    }
    const old = this.instances;
    if (this.name !== name) {        // closed meanwhile
      await this.#destroy(r.instances);
      return;
    }
    this.error = r.warning ?? null;
    this.instances = r.instances;
    this.recorded = r.recorded;
    this.frame = r.frames;
    this.frames = this.live ? Math.max(r.journalFrames, this.frames ?? 0) : r.journalFrames;
    this.complete = r.complete;
    if (this.target > this.frames) this.target = this.frames;
    if (this.target === to && to > this.frame) this.target = this.frame; // the journal ends sooner
    // The replayed frames came before the reply, on the same connection:
    // the newest of each is the state at this frame.
    this.instanceFrames = {};
    this.time = null;
    for (const id of r.instances) {
      const f = this.host.latest(id);
      if (!f) continue;
      this.instanceFrames[id] = f.readUInt32LE(20) * 4294967296 + f.readUInt32LE(16);
      if (this.time === null) this.time = f.readDoubleLE(24);
    }
    this.#broadcast();
    await this.#destroy(old);
  }
}
