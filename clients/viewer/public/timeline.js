// The timeline bar of the viewer page (issue 13, part 4): pick a journal of
// clothd's --data-dir (a recording, or the one in progress), then play,
// pause, scrub and step it frame by frame. The relay replays the journal to
// the frame asked for (lib/timeline.js) and the replayed instances arrive
// as any instance does; this module only sends the wishes and shows where
// the timeline stands. Scrubbing sends every position the slider passes:
// the relay keeps only the newest while a replay runs.
//
// createTimeline({send, hook, setHidden}) builds the bar in #viewport (shown
// once clothd lists journals: it runs with --data-dir) and
// returns onMessage(msg) for the relay's 'timeline' and 'journals'
// messages. setHidden(ids, aliases) is told which instances to hide while
// a journal is open (the recorded originals, which may still be live where
// the replay is drawn) and which recorded id each replayed one stands for. hook.timeline is what the page shows (for the tests).

const STYLE = '/timeline.css';

function el(tag, props = {}, children = []) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children);
  return e;
}

export function createTimeline({ send, hook, setHidden }) {
  document.head.append(el('link', { rel: 'stylesheet', href: STYLE }));

  const select = el('select', { id: 'tl-journals', title: 'journals in clothd\'s --data-dir' });
  const list = el('button', { id: 'tl-list', type: 'button', textContent: '↻', title: 'read the journals again' });
  const open = el('button', { id: 'tl-open', type: 'button', textContent: 'Open' });
  const close = el('button', { id: 'tl-close', type: 'button', textContent: 'Close', hidden: true });
  const back = el('button', { id: 'tl-back', type: 'button', textContent: '‹ −1', title: 'one frame back (←)' });
  const play = el('button', { id: 'tl-play', type: 'button', textContent: 'Play', title: 'play / pause (space)' });
  const fwd = el('button', { id: 'tl-fwd', type: 'button', textContent: '+1 ›', title: 'one frame forward (→)' });
  const scrub = el('input', { id: 'tl-scrub', type: 'range', min: '0', max: '0', step: '1', value: '0' });
  const readout = el('span', { id: 'tl-readout', className: 'tl-readout', textContent: '' });
  const controls = el('div', { className: 'tl-controls', hidden: true }, [back, play, fwd, scrub, readout]);
  const note = el('span', { id: 'tl-note', className: 'tl-note' });
  // Hidden until clothd lists journals (it has a --data-dir).
  const bar = el('div', { id: 'timeline', className: 'timeline', hidden: true }, [
    el('span', { className: 'tl-title', textContent: 'Timeline' }), select, list, open, close, controls, note,
  ]);
  document.getElementById('viewport').append(bar);

  // What the relay says; `scrubbing` keeps the slider under the user's hand.
  let tl = { open: false, frame: 0, target: 0, frames: null, playing: false, instances: [], recorded: [] };
  let scrubbing = false;
  hook.timeline = { ...tl, journals: [], recording: null, readout: '' };

  const act = (action, extra = {}) => send({ type: 'timeline', action, ...extra });

  list.addEventListener('click', () => act('list'));
  open.addEventListener('click', () => {
    if (select.value) act('open', { name: select.value });
  });
  close.addEventListener('click', () => act('close'));
  back.addEventListener('click', () => act('step', { by: -1 }));
  fwd.addEventListener('click', () => act('step', { by: 1 }));
  play.addEventListener('click', () => act(tl.playing ? 'pause' : 'play'));
  scrub.addEventListener('pointerdown', () => { scrubbing = true; });
  scrub.addEventListener('input', () => {
    scrubbing = true;
    if (tl.playing) act('pause');
    act('seek', { frame: Number(scrub.value) });
  });
  scrub.addEventListener('change', () => {
    scrubbing = false;
    act('seek', { frame: Number(scrub.value) });
  });
  window.addEventListener('keydown', (e) => {
    if (!tl.open || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target instanceof HTMLInputElement && e.target !== scrub) return;
    // A focused button or list takes its own keys (space clicks the button).
    if (e.target instanceof HTMLButtonElement || e.target instanceof HTMLSelectElement) return;
    if (e.key === 'ArrowLeft') act('step', { by: -1 });
    else if (e.key === 'ArrowRight') act('step', { by: 1 });
    else if (e.key === ' ') act(tl.playing ? 'pause' : 'play');
    else return;
    e.preventDefault();
  });

  function showJournals(msg) {
    const names = msg.journals ?? [];
    const live = msg.recording?.name ?? null;
    const keep = select.value;
    select.replaceChildren(...names.map((n) => el('option', {
      value: n, textContent: n === live ? `${n} (recording, ${msg.recording.frames} frames)` : n,
    })));
    if (names.includes(keep)) select.value = keep;
    else if (names.length > 0) select.value = names[0];
    note.textContent = msg.error ?? (names.length === 0 ? 'no journals in clothd\'s --data-dir' : '');
    open.disabled = names.length === 0;
    bar.hidden = !msg.available && !tl.open;
    hook.timeline = { ...hook.timeline, available: !!msg.available, journals: names, recording: msg.recording ?? null };
  }

  function showState(msg) {
    tl = msg;
    controls.hidden = !tl.open;
    close.hidden = !tl.open;
    open.hidden = tl.open;
    select.disabled = tl.open;
    bar.classList.toggle('open', tl.open);
    play.textContent = tl.playing ? 'Pause' : 'Play';
    play.setAttribute('aria-pressed', String(tl.playing));
    const frames = tl.frames ?? 0;
    scrub.max = String(frames);
    if (!scrubbing) scrub.value = String(tl.target);
    const time = tl.time === null || tl.time === undefined ? '–' : `${tl.time.toFixed(3)} s`;
    const text = tl.open
      ? `frame ${tl.frame} / ${frames}${tl.live ? ' (recording)' : ''} · t ${time}${tl.pending ? ' …' : ''}`
      : '';
    readout.textContent = text;
    note.textContent = tl.error ?? (tl.open ? '' : note.textContent);
    bar.classList.toggle('error', !!tl.error);
    setHidden(new Set(tl.open ? tl.recorded : []), new Map(tl.open ? tl.instances.map((id, i) => [id, tl.recorded[i]]) : []));
    hook.timeline = {
      ...hook.timeline,
      open: tl.open, name: tl.name, frame: tl.frame, target: tl.target, frames: tl.frames, time: tl.time,
      live: tl.live, complete: tl.complete, playing: tl.playing, pending: tl.pending, instances: tl.instances,
      recorded: tl.recorded, instanceFrames: tl.instanceFrames, replays: tl.replays, error: tl.error,
      readout: text,
    };
  }

  return {
    onMessage(msg) {
      if (!msg) return;
      if (msg.type === 'journals') showJournals(msg);
      else if (msg.type === 'timeline') showState(msg);
    },
    // The relay or clothd is (back) here: the journals may have changed.
    relist() {
      act('list');
    },
  };
}
