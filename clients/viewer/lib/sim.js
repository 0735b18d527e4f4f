// The viewer's simulation controls (issue 12): pause, single step and reset,
// through clothd's protocol, shared by every page of the relay (as the debug
// flag is).
//
// The viewer steps nothing itself: a game server or a script (demo.js)
// does, with `step`. So pausing cannot stop a loop of the viewer's own. It
// disables the instances (`enable` false), which clothd's `step` skips
// whoever sends it, and resuming enables again only the instances the relay
// paused: never one that someone else disabled (a game server culling far
// capes) or that clothd's guard stopped as unstable. An instance that
// appears while paused is paused as it appears.
//
// A single step advances every paused instance by one step of its own dt
// (from its frames: time over frame number; 1/60 s until it has stepped
// twice), in one burst that clothd reads at once: enable, step, disable.
// clothd runs the lines after a finished step before the other clients'
// requests that waited for it (PROTOCOL.md, ordering guarantee 7), so a
// game server's step that arrives meanwhile finds them disabled again:
// exactly one step.
//
// A reset puts instances back to the state the relay first saw them in:
// when an instance first shows up enabled, the relay saves it in clothd's
// memory (`save` with "memory":true: one snapshot per slot, kept for the
// relay's connection, no file), and a reset loads it back in place (`load`
// with "memory":true and "restore":true: the same id, every field a step
// reads, frame and time included), paused again when the scene is. A
// clothd without memory snapshots (an older one) says so, and reset is
// unavailable. The snapshots die with the connection: after a reconnection
// the reset points are the states seen then.

const DEFAULT_DT = 1 / 60;

export class SimControl {
  // host: request(cmd, fields) and batch([[cmd, fields], ...]) to clothd
  // (batch resolves with [{reply}|{error}] in order), broadcast(obj) to
  // every page, meta() the relay's instance metadata (id -> {enabled,
  // unstable, frame, ...}), refresh({force}) the instance list, log(text),
  // readOnly() whether clothd gave the relay a read-only token (it may
  // then neither save nor enable: nothing is tried).
  constructor(host) {
    this.host = host;
    this.queue = Promise.resolve();
    this.#clear();
  }

  #clear() {
    this.paused = false;
    this.pausedIds = new Set();  // instances this relay disabled
    this.seen = new Set();       // instances met since connecting (paused once, when they appear while paused)
    this.lastFrames = new Map(); // id -> {frame, time} of the newest frame relayed
    this.dts = new Map();        // id -> its step's dt, from its frames
    this.resetPoints = new Map(); // id -> {name, frame}
    this.saving = new Set();     // ids whose reset point is being saved
    this.refused = new Set();    // ids clothd would not save (a limit): not asked again
    this.resetSupport = null;    // null: not known yet; true; false (resetReason says why)
    this.resetReason = null;
    this.steps = 0;              // single steps done since the pause
    this.resets = 0;             // resets done
    this.error = null;
  }

  // Lost clothd: a new connection has none of this connection's memory
  // snapshots, and a restarted clothd may give the paused ids to others.
  forget() {
    if (this.paused) this.host.log('viewer: lost clothd while paused: its paused instances stay disabled there (clothctl enable ID true)');
    this.#clear();
    this.host.broadcast(this.state());
  }

  state() {
    return {
      type: 'sim',
      paused: this.paused,
      pausedIds: [...this.pausedIds],
      dts: Object.fromEntries(this.dts),
      reset: {
        available: this.resetSupport !== false,
        reason: this.resetReason,
        points: Object.fromEntries([...this.resetPoints].map(([id, p]) => [id, p.frame])),
      },
      steps: this.steps,
      resets: this.resets,
      error: this.error,
    };
  }

  // A frame relayed: the instance's dt is its time over its frame number
  // since the previous one (a reset goes back: only remembered then).
  noteFrame(id, frame, time) {
    const last = this.lastFrames.get(id);
    this.lastFrames.set(id, { frame, time });
    if (!last || frame <= last.frame) return;
    const dt = (time - last.time) / (frame - last.frame);
    if (dt > 0 && dt <= 1) this.dts.set(id, dt);
  }

  // A page's wish: {action: 'pause'|'resume'|'toggle'|'step'|'reset', instance?}.
  // Actions run one at a time, in the order they came.
  onMessage(msg) {
    const run = async () => {
      this.error = null;
      try {
        if (msg.action === 'pause' || (msg.action === 'toggle' && !this.paused)) await this.#pause();
        else if (msg.action === 'resume' || msg.action === 'toggle') await this.#resume();
        else if (msg.action === 'step') await (this.paused ? this.#step() : this.#pause());
        else if (msg.action === 'reset') await this.#reset(msg.instance ?? null);
        else throw new Error(`sim: unknown action "${msg.action}" (pause, resume, toggle, step, reset)`);
      } catch (err) {
        this.error = err.message;
      }
      await this.host.refresh({ force: false }).catch(() => {});
      this.host.broadcast(this.state());
    };
    this.queue = this.queue.then(run, run);
    return this.queue;
  }

  // After every refresh of the instance list: reset points for instances
  // seen enabled for the first time, and, while paused, newcomers paused.
  onInstances() {
    if (this.host.readOnly()) return;
    const meta = this.host.meta();
    for (const id of [...this.resetPoints.keys()]) if (!meta.has(id)) this.resetPoints.delete(id);
    for (const id of [...this.pausedIds]) if (!meta.has(id)) this.pausedIds.delete(id);
    for (const id of [...this.refused]) if (!meta.has(id)) this.refused.delete(id);
    for (const id of [...this.dts.keys()]) if (!meta.has(id)) { this.dts.delete(id); this.lastFrames.delete(id); }
    const fresh = [];
    const newcomers = [];
    for (const [id, m] of meta) {
      const running = m.enabled !== false && !m.unstable;
      if (running && this.resetSupport !== false && !this.resetPoints.has(id) && !this.saving.has(id)
        && !this.refused.has(id)) fresh.push(id);
      if (!this.seen.has(id)) {
        this.seen.add(id);
        if (this.paused && running) newcomers.push(id);
      }
    }
    // The reset point first, while the newcomer still runs.
    if (fresh.length > 0) this.queue = this.queue.then(() => this.#saveResetPoints(fresh));
    if (newcomers.length > 0) this.queue = this.queue.then(() => (this.paused ? this.#disable(newcomers) : null));
  }

  // One memory snapshot per instance, named by its slot (a new instance in
  // the slot replaces it), and the frame it holds: `status` read in the
  // same burst answers for the same moment.
  async #saveResetPoints(ids) {
    if (this.resetSupport === null) await this.#probe();
    if (this.resetSupport === false) return;
    for (const id of ids) this.saving.add(id);
    try {
      const list = [];
      for (const id of ids) list.push(['save', { name: `viewer-reset-${id & 0xffff}`, instances: [id], memory: true }]);
      list.push(['status', {}]);
      const answers = await this.host.batch(list);
      const frames = new Map((answers.at(-1).reply?.instances ?? []).map((s) => [s.instance, s.frame]));
      let changed = false;
      ids.forEach((id, k) => {
        const { reply, error } = answers[k];
        if (reply) {
          this.resetSupport = true;
          this.resetPoints.set(id, { name: reply.name, frame: frames.get(id) ?? null });
          changed = true;
        } else if (error && error.code !== 'not_found') {
          // Say it once; the instance simply has no reset point.
          this.refused.add(id);
          this.host.log(`viewer: no reset point for instance ${id}: ${error.message}`);
        }
      });
      if (changed) this.host.broadcast(this.state());
    } finally {
      for (const id of ids) this.saving.delete(id);
    }
  }

  // Whether clothd keeps memory snapshots: one that does answers a load of
  // a name it does not hold with "no memory snapshot"; an older one reads
  // no "memory" member and looks for a file (or has no --data-dir), and
  // must not be sent a save, which it would write to its --data-dir.
  async #probe() {
    try {
      await this.host.request('load', { name: 'viewer-probe', memory: true });
      this.resetSupport = false; // a clothd with a file of that name: not what was asked
    } catch (err) {
      this.resetSupport = err.code === 'not_found' && /no memory snapshot/.test(err.serverMessage ?? '');
    }
    if (!this.resetSupport) {
      this.resetReason = 'this clothd keeps no memory snapshots (load "memory"): reset needs a newer clothd';
      this.host.log(`viewer: reset unavailable: ${this.resetReason}`);
      this.host.broadcast(this.state());
    }
  }

  async #disable(ids) {
    if (ids.length === 0) return;
    const answers = await this.host.batch(ids.map((id) => ['enable', { instance: id, enabled: false }]));
    ids.forEach((id, k) => { if (answers[k].reply) this.pausedIds.add(id); });
    this.host.broadcast(this.state());
  }

  // Every running instance (enabled, not unstable) is disabled.
  async #pause() {
    const ids = [...this.host.meta()].filter(([, m]) => m.enabled !== false && !m.unstable).map(([id]) => id);
    this.paused = true;
    this.steps = 0; // counted per pause
    await this.#disable(ids);
  }

  async #resume() {
    const ids = [...this.pausedIds];
    this.paused = false;
    this.pausedIds.clear();
    if (ids.length === 0) return;
    const answers = await this.host.batch(ids.map((id) => ['enable', { instance: id, enabled: true }]));
    const failed = answers.filter((a) => a.error && a.error.code !== 'not_found');
    if (failed.length > 0) throw new Error(`resume: ${failed[0].error.message}`);
  }

  // Every paused instance one step of its own dt: enabled, stepped (one
  // `step` per distinct dt) and disabled again in one burst.
  async #step() {
    const meta = this.host.meta();
    const ids = [...this.pausedIds].filter((id) => meta.has(id));
    if (ids.length === 0) return;
    const byDt = new Map();
    for (const id of ids) {
      const dt = this.dts.get(id) ?? DEFAULT_DT;
      if (!byDt.has(dt)) byDt.set(dt, []);
      byDt.get(dt).push(id);
    }
    const steps = [...byDt].map(([dt, group]) => ['step', { dt, instances: group }]);
    const answers = await this.host.batch([
      ...ids.map((id) => ['enable', { instance: id, enabled: true }]),
      ...steps,
      ...ids.map((id) => ['enable', { instance: id, enabled: false }]),
    ]);
    const failed = answers.find((a) => a.error);
    this.steps++;
    if (failed) throw new Error(`step: ${failed.error.message}`);
  }

  // The instance (or every one with a reset point) back to its reset point.
  async #reset(instance) {
    if (this.resetSupport === false) throw new Error(`reset: ${this.resetReason}`);
    const ids = instance === null ? [...this.resetPoints.keys()] : [instance];
    const missing = ids.filter((id) => !this.resetPoints.has(id));
    if (missing.length > 0) throw new Error(`reset: no reset point for instance ${missing[0]} yet`);
    if (ids.length === 0) return;
    const list = [];
    for (const id of ids) {
      list.push(['load', { name: this.resetPoints.get(id).name, memory: true, restore: true }]);
      // Running, as first seen; paused again while the scene is.
      list.push(['enable', { instance: id, enabled: !(this.paused && this.pausedIds.has(id)) }]);
    }
    const answers = await this.host.batch(list);
    this.resets++;
    // A new frame number is not a step: the dt is read again from the frames.
    for (const id of ids) this.lastFrames.delete(id);
    const failed = answers.find((a) => a.error);
    if (failed) throw new Error(`reset: ${failed.error.message}`);
  }
}
