// The step-time plot of the viewer page (issue 12): a rolling chart of the
// last minute of clothd's step time, one point every half second from the
// relay (lib/steptimes.js: the mean wall time of the step requests that
// ended in that half second, from clothd's stats), with the step budget as
// a dashed line where steps had one, and a red tick where a step overran
// it. The scale grows to fit the larger of the mean and the budget and is
// labelled on the left; the readout says the newest sample.
//
// createPlot({hook}) draws into #plot-canvas and returns
// {onMessage(msg), setSamples(list, available), setVisible(on)}. It draws
// through chart.js, as the kinetic-energy plot does.

import { createChart } from './chart.js';

const SPAN_MS = 60000;
const WIDTH = 280;
const HEIGHT = 84;
const LINE = '#4c9ffe';     // the step time
const BUDGET = '#d9a13c';   // the budget
const OVER = '#e5534b';     // a sample over its budget

const fmtMs = (v) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2));

export function createPlot({ hook }) {
  const figure = document.getElementById('plot');
  const readout = document.getElementById('plot-readout');
  const chart = createChart(document.getElementById('plot-canvas'), {
    width: WIDTH, height: HEIGHT, span: SPAN_MS, scale: 'linear', unit: 'ms', format: fmtMs, minTop: 0.1,
  });
  let samples = [];
  let available = null;
  let visible = true;
  hook.plot = { available, samples: 0, last: null, maxY: null, budgetY: null, visible };

  function draw() {
    const now = samples.length > 0 ? samples[samples.length - 1].t : Date.now();
    const values = [];
    for (const s of samples) values.push(s.meanMs ?? 0, s.budgetMs ?? 0);
    const axis = chart.frame(now, values);
    // A half second in which some step overran its budget: a red tick
    // from the budget up to where its slowest step may have taken (the top
    // of its histogram bucket), clipped to the scale.
    chart.ticks(samples.filter((s) => s.budgetMs !== null && s.overruns > 0)
      .map((s) => ({ t: s.t, from: s.budgetMs, to: s.maxMs ?? s.budgetMs })), { colour: OVER, width: 2 });
    // The mean step time, broken where no step ended.
    chart.line(samples.map((s) => ({ t: s.t, v: s.meanMs })), { colour: LINE, width: 2 });
    // The budget: dashed, where the steps had one (on top of the rest: the
    // line to read the rest against). A half second without steps keeps
    // the line; steps without a budget break it.
    const budget = [];
    let budgetY = null;
    let budgetFrom = null; // where the newest unbroken run of the line starts
    let budgetRun = 0;     // and how many samples it holds
    let pen = false;
    for (const s of samples) {
      if (s.budgetMs === null || s.budgetMs === undefined) {
        if (s.steps > 0) {
          budget.push({ t: s.t, v: null });
          pen = false;
        }
        continue;
      }
      if (!pen) {
        budgetFrom = axis.x(s.t);
        budgetRun = 0;
      }
      pen = true;
      budgetRun++;
      budgetY = axis.y(s.budgetMs);
      budget.push({ t: s.t, v: s.budgetMs });
    }
    chart.line(budget, { colour: BUDGET, width: 1.5, dash: [5, 3], lead: 2 });
    const last = samples.length > 0 ? samples[samples.length - 1] : null;
    let text;
    if (available === false) text = 'clothd has no stats';
    else if (!last) text = 'waiting for clothd';
    else if (last.meanMs === null) text = 'no steps';
    else {
      const rate = last.steps / 0.5;
      text = `${fmtMs(last.meanMs)} ms · ${rate.toFixed(0)}/s`;
      if (last.budgetMs !== null) text += ` · budget ${fmtMs(last.budgetMs)}${last.overruns > 0 ? `, ${last.overruns} over` : ''}`;
    }
    readout.textContent = text;
    // budgetY: the newest budget's row on the canvas, budgetFrom the x
    // where its newest unbroken run starts, in CSS pixels; budgetRun: the
    // samples in that run.
    hook.plot = {
      available, visible, samples: samples.length, last, maxY: axis.max, budgetY, budgetFrom, budgetRun, readout: text,
    };
  }

  function trim() {
    const now = samples.length > 0 ? samples[samples.length - 1].t : 0;
    while (samples.length > 0 && samples[0].t < now - SPAN_MS - 1000) samples.shift();
  }

  draw();
  return {
    onMessage(msg) {
      if (msg.available !== undefined && msg.available !== null) available = msg.available;
      if (msg.sample) {
        samples.push(msg.sample);
        trim();
      }
      if (visible) draw();
    },
    setSamples(list, avail) {
      samples = Array.isArray(list) ? list.slice() : [];
      available = avail ?? null;
      trim();
      draw();
    },
    setVisible(on) {
      visible = !!on;
      figure.hidden = !visible;
      if (visible) draw();
      hook.plot = { ...hook.plot, visible };
    },
  };
}
