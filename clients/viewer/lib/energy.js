// Each instance's kinetic energy for the viewer's energy plot (issue 12),
// from clothd's `status`: every instance's entry carries `kineticEnergy`
// (½ Σ m v² of its free particles after its last step, in joules, summed
// by the step itself, so a `status` costs clothd no pass over the
// particles; 0 before the first step and while asleep) and its `frame`.
// While a page is open the relay reads `status` four times a second and
// keeps the last minute of [t, energy, frame] per instance; a page gets
// them all in `hello` (as `energy`) and each new reading as
// {type:'energy', t, values:[[id, energy, frame], ...]} (every live
// instance; an instance missing from it is gone). A clothd whose `status`
// has no `kineticEnergy` (an older one) is told to the pages once as
// {type:'energy', available:false}, and not asked again on that
// connection. The instance list keeps its own, slower poll (server.js).

import { Poller } from './poller.js';

const POLL_MS = 250;
const SPAN_MS = 60000;

export class Energies extends Poller {
  constructor(host) {
    super(host, POLL_MS);
    this.series = new Map(); // instance id -> [[t, energy, frame], ...], oldest first
  }

  // A new process reuses ids: nothing of the old one holds.
  forget() {
    this.series.clear();
    this.available = null;
  }

  unwatched() {
    this.series.clear(); // a page opened later sees no line across the gap
  }

  state() {
    return { available: this.available, spanMs: SPAN_MS, series: Object.fromEntries(this.series) };
  }

  async read() {
    const st = await this.host.request('status');
    const list = Array.isArray(st?.instances) ? st.instances : [];
    if (list.length > 0 && list.every((s) => s.kineticEnergy === undefined)) {
      this.giveUp();
      this.host.broadcast({ type: 'energy', available: false });
      return;
    }
    this.available = true;
    this.host.broadcast({ type: 'energy', available: true, ...this.add(Date.now(), list) });
  }

  // Adds one reading of `status`'s instances at time t: returns the
  // message's {t, values}. An energy that is not a finite number (JSON has
  // no infinity) is kept as null: the plot breaks its line there.
  add(t, instances) {
    const values = [];
    const live = new Set();
    for (const s of instances) {
      if (!Number.isInteger(s.instance)) continue;
      const e = typeof s.kineticEnergy === 'number' && Number.isFinite(s.kineticEnergy) ? s.kineticEnergy : null;
      const frame = Number.isInteger(s.frame) ? s.frame : null;
      live.add(s.instance);
      values.push([s.instance, e, frame]);
      let list = this.series.get(s.instance);
      if (!list) this.series.set(s.instance, (list = []));
      list.push([t, e, frame]);
      while (list.length > 0 && list[0][0] < t - SPAN_MS) list.shift();
    }
    for (const id of [...this.series.keys()]) if (!live.has(id)) this.series.delete(id);
    return { t, values };
  }
}
