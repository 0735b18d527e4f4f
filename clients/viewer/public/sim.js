// The simulation's toolbar of the viewer page (issue 12): pause / resume,
// single step and reset, sent to the relay, which does them through
// clothd's protocol for every page alike (lib/sim.js says how). The buttons
// show the relay's state ({type:'sim'} messages); keys: space pauses or
// resumes, "." steps (pausing first when running), R resets the selected
// instance, or every instance when none is selected.
//
// createSim({send, hook, selected, showError}) wires the buttons in #sim and
// returns {onMessage(msg), setReadOnly(ro, tip), update(), key(e)}.

const $ = (id) => document.getElementById(id);

export function createSim({ send, hook, selected, showError }) {
  let sim = { paused: false, pausedIds: [], reset: { available: true, reason: null, points: {} }, steps: 0, resets: 0, error: null };
  let readOnly = false;
  let readOnlyTip = '';
  hook.sim = { ...sim, stateText: '' };

  const act = (action, extra = {}) => send({ type: 'sim', action, ...extra });
  const reset = () => {
    const id = selected();
    act('reset', id === null ? {} : { instance: id });
  };

  $('sim-pause').addEventListener('click', () => act('toggle'));
  $('sim-step').addEventListener('click', () => act('step'));
  $('sim-reset').addEventListener('click', reset);

  // What the toolbar says and allows, from the relay's state, the selection
  // and the access.
  function update() {
    const id = selected();
    const points = sim.reset.points ?? {};
    const canReset = sim.reset.available && (id === null ? Object.keys(points).length > 0 : String(id) in points);
    const pause = $('sim-pause');
    pause.setAttribute('aria-pressed', String(sim.paused));
    pause.querySelector('.icon').textContent = sim.paused ? '▶' : '❚❚';
    pause.querySelector('.text').textContent = sim.paused ? 'Resume' : 'Pause';
    pause.title = sim.paused ? 'Resume the instances the viewer paused (space)' : 'Pause every instance: clothd\'s step skips them (space)';
    $('sim-step').title = sim.paused ? 'Step every paused instance once, by its own dt (.)' : 'Pause (.), then step once per press';
    const reset = $('sim-reset');
    reset.querySelector('.text').textContent = id === null ? 'Reset all' : `Reset #${id}`;
    const resetTip = !sim.reset.available ? sim.reset.reason
      : !canReset ? 'No reset point yet: the viewer saves one when it first sees an instance running'
        : id === null ? 'Every instance back to the state the viewer first saw it in (R)'
          : `#${id} back to frame ${points[id] ?? '?'}, where the viewer first saw it (R)`;
    for (const b of [pause, $('sim-step'), reset]) b.disabled = readOnly;
    reset.disabled = readOnly || !canReset;
    if (readOnly) for (const b of [pause, $('sim-step'), reset]) b.title = readOnlyTip;
    else reset.title = resetTip ?? '';
    const n = sim.pausedIds.length;
    const text = sim.paused ? `paused${n > 0 ? ` (${n})` : ''}${sim.steps > 0 ? ` · ${sim.steps} step${sim.steps === 1 ? '' : 's'}` : ''}` : 'running';
    const el = $('sim-state');
    el.textContent = text;
    el.dataset.state = sim.paused ? 'paused' : 'running';
    hook.sim = { ...sim, stateText: text, canReset, resetLabel: reset.querySelector('.text').textContent };
  }

  let lastError = null;
  return {
    onMessage(msg) {
      if (!msg) return;
      sim = { ...sim, ...msg };
      if (msg.error && msg.error !== lastError) showError(msg.error);
      lastError = msg.error ?? null;
      update();
    },
    setReadOnly(ro, tip) {
      readOnly = ro;
      readOnlyTip = tip;
      update();
    },
    update,
    // Space, "." and R; false when the key is not the toolbar's.
    key(e) {
      if (e.key !== ' ' && e.key !== '.' && e.key !== 'r' && e.key !== 'R') return false;
      if (readOnly) showError(readOnlyTip);
      else if (e.key === ' ') act('toggle');
      else if (e.key === '.') act('step');
      else reset();
      return true;
    },
    pausedIds: () => sim.pausedIds,
  };
}
