// clothd's step time for the viewer's plot (issue 12), from its `stats`:
// every half second the relay reads the step-duration histogram (every
// step request's time from its start on the server to its reply, the
// `actualMs` a budgeted step's reply carries) and the budget counters, and
// turns the difference from the previous reading into one sample: how many
// steps ended in between, their mean time, an upper bound of the slowest
// (the top of the highest histogram bucket they reached), and, when some
// of them had a time budget, the budgets' mean and how many overran it.
// The last minute of samples goes to a page in `hello`; each new one to
// every page as {type:'steptime', sample}. Server-wide: clothd measures
// step requests, not instances.

import { Poller } from './poller.js';

const POLL_MS = 500;
const KEEP = 120; // samples: a minute

export class StepTimes extends Poller {
  constructor(host) {
    super(host, POLL_MS);
    this.samples = [];
    this.last = null; // the previous reading {t, count, sum, counts, budgetSteps, budgetSeconds, overruns}
  }

  // The next clothd's counters start again.
  forget() {
    this.last = null;
    if (this.available === false) this.available = null;
  }

  unwatched() {
    this.last = null; // the gap would blur the next sample
  }

  state() {
    return { available: this.available, samples: this.samples };
  }

  async read() {
    let st;
    try {
      st = await this.host.request('stats', {});
    } catch (err) {
      if (err.code === 'unknown_command') {
        this.giveUp();
        this.host.broadcast({ type: 'steptime', available: false, sample: null });
      }
      return;
    }
    const reading = StepTimes.reading(st, Date.now());
    if (reading === null) return;
    const prev = this.last;
    this.last = reading;
    if (this.available !== true) {
      this.available = true;
      this.host.broadcast({ type: 'steptime', available: true, sample: null });
    }
    if (!prev || reading.t - prev.t > 4 * POLL_MS || reading.count < prev.count) return;
    const sample = StepTimes.sample(prev, reading, st.steps.durationSeconds.bounds);
    this.samples.push(sample);
    if (this.samples.length > KEEP) this.samples.shift();
    this.host.broadcast({ type: 'steptime', available: true, sample });
  }

  // The counters of a `stats` reply that the plot reads; null when the
  // reply lacks them.
  static reading(st, t) {
    const d = st?.steps?.durationSeconds;
    if (!d || !Array.isArray(d.counts) || !Array.isArray(d.bounds)) return null;
    const b = st.steps.budget ?? {};
    return {
      t,
      count: d.count,
      sum: d.sum,
      counts: d.counts,
      budgetSteps: b.steps ?? 0,
      overruns: b.overruns ?? 0,
      budgetSeconds: b.budgetSeconds ?? null, // a clothd that sums its budgets
    };
  }

  // One sample from two readings: {t, steps, meanMs, maxMs, budgetMs,
  // budgetSteps, overruns}; meanMs and maxMs null when no step ended,
  // budgetMs null when no step had a budget (or clothd does not say).
  static sample(a, b, bounds) {
    const steps = b.count - a.count;
    let top = -1;
    for (let i = 0; i < b.counts.length; i++) if (b.counts[i] - (a.counts[i] ?? 0) > 0) top = i;
    const budgetSteps = b.budgetSteps - a.budgetSteps;
    const budgetMs = budgetSteps > 0 && b.budgetSeconds !== null && a.budgetSeconds !== null
      ? ((b.budgetSeconds - a.budgetSeconds) / budgetSteps) * 1000 : null;
    return {
      t: b.t,
      steps,
      meanMs: steps > 0 ? ((b.sum - a.sum) / steps) * 1000 : null,
      // The highest bucket reached: the slowest took at most its bound (the
      // last bucket has none: the largest bound, "and over").
      maxMs: top < 0 ? null : (bounds[Math.min(top, bounds.length - 1)] * 1000),
      maxOver: top >= bounds.length,
      budgetMs,
      budgetSteps,
      overruns: b.overruns - a.overruns,
    };
  }
}
