// The step-time plot of the viewer page (issue 12): a rolling chart of the
// last minute of clothd's step time, one point every half second from the
// relay (lib/steptimes.js: the mean wall time of the step requests that
// ended in that half second, from clothd's stats), with the step budget as
// a dashed line where steps had one, and a red tick where a step overran
// it. The scale grows to fit the larger of the mean and the budget and is
// labelled on the left; the readout says the newest sample.
//
// createPlot({hook}) draws into #plot-canvas and returns
// {onMessage(msg), setSamples(list, available), setVisible(on)}.

const SPAN_MS = 60000;
const LINE = '#4c9ffe';     // the step time
const BUDGET = '#d9a13c';   // the budget
const OVER = '#e5534b';     // a sample over its budget
const AXIS = '#2a2e37';
const TEXT = '#8a919e';

// The smallest of 1, 2, 5 × 10^k at or above v.
function niceCeil(v) {
  const k = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * k >= v) return m * k;
  return 10 * k;
}

const fmtMs = (v) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2));

export function createPlot({ hook }) {
  const canvas = document.getElementById('plot-canvas');
  const figure = document.getElementById('plot');
  const readout = document.getElementById('plot-readout');
  const ctx = canvas.getContext('2d');
  const dpr = Math.min(window.devicePixelRatio || 1, 2);
  canvas.width = Math.round(280 * dpr);
  canvas.height = Math.round(84 * dpr);
  let samples = [];
  let available = null;
  let visible = true;
  hook.plot = { available, samples: 0, last: null, maxY: null, budgetY: null, visible };

  function draw() {
    const w = 280;
    const h = 84;
    const left = 30;
    const top = 4;
    const bottom = h - 4;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const now = samples.length > 0 ? samples[samples.length - 1].t : Date.now();
    const x = (t) => left + ((t - (now - SPAN_MS)) / SPAN_MS) * (w - left - 2);
    let peak = 0;
    for (const s of samples) peak = Math.max(peak, s.meanMs ?? 0, s.budgetMs ?? 0);
    const maxY = niceCeil(Math.max(peak * 1.15, 0.1));
    const y = (v) => bottom - (v / maxY) * (bottom - top);
    // Axis: the scale's top and zero.
    ctx.strokeStyle = AXIS;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(left, top + 0.5);
    ctx.lineTo(w, top + 0.5);
    ctx.moveTo(left, bottom + 0.5);
    ctx.lineTo(w, bottom + 0.5);
    ctx.stroke();
    ctx.fillStyle = TEXT;
    ctx.font = '10px ui-monospace, "DejaVu Sans Mono", monospace';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'top';
    ctx.fillText(`${fmtMs(maxY)}`, left - 4, top);
    ctx.textBaseline = 'bottom';
    ctx.fillText('0 ms', left - 4, bottom + 2);
    // A half second in which some step overran its budget: a red tick
    // from the budget up to where its slowest step may have taken (the top
    // of its histogram bucket), clipped to the scale.
    ctx.strokeStyle = OVER;
    ctx.lineWidth = 2;
    ctx.beginPath();
    for (const s of samples) {
      if (s.budgetMs === null || !(s.overruns > 0)) continue;
      ctx.moveTo(x(s.t), y(s.budgetMs));
      ctx.lineTo(x(s.t), Math.max(y(Math.min(s.maxMs ?? s.budgetMs, maxY)), top));
    }
    ctx.stroke();
    // The mean step time, broken where no step ended.
    ctx.strokeStyle = LINE;
    ctx.lineWidth = 2;
    ctx.beginPath();
    let pen = false;
    for (const s of samples) {
      if (s.meanMs === null) {
        pen = false;
        continue;
      }
      if (pen) ctx.lineTo(x(s.t), y(s.meanMs));
      else ctx.moveTo(x(s.t), y(s.meanMs));
      pen = true;
    }
    ctx.stroke();
    // The budget: dashed, where the steps had one.
    // (On top of the rest: the line to read the rest against.)
    let budgetY = null;
    let budgetFrom = null; // where the newest unbroken run of the line starts
    let budgetRun = 0;     // and how many samples it holds
    ctx.strokeStyle = BUDGET;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([5, 3]);
    ctx.beginPath();
    pen = false;
    for (const s of samples) {
      if (s.budgetMs === null || s.budgetMs === undefined) {
        // A half second without steps keeps the line; steps without a
        // budget break it.
        if (s.steps > 0) pen = false;
        continue;
      }
      budgetY = y(s.budgetMs);
      if (!pen) {
        budgetFrom = x(s.t);
        budgetRun = 0;
      }
      budgetRun++;
      if (pen) ctx.lineTo(x(s.t), budgetY);
      else ctx.moveTo(x(s.t) - 2, budgetY);
      pen = true;
    }
    ctx.stroke();
    ctx.setLineDash([]);
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
    hook.plot = { available, visible, samples: samples.length, last, maxY, budgetY, budgetFrom, budgetRun, readout: text };
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
