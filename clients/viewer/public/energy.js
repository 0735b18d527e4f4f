// The kinetic-energy plot of the viewer page (issue 12): the selected
// instance's kinetic energy over the last minute, as clothd's `status`
// reports it (½ Σ m v² of its free particles after its last step, in
// joules), four readings a second from the relay (lib/energy.js), drawn in
// the instance's own colour through chart.js, as the step-time plot is.
//
// The scale is logarithmic, in whole decades of joules: a cloth that
// settles loses energy by a roughly constant factor per second, a straight
// slope on a log axis that stays readable down to micro-joules (a linear
// axis fitted to the fall's first joule shows all of the settling as a
// flat line on zero), and a blow-up climbs decade after decade up the same
// axis instead of squashing the rest of the minute flat. Zero (before the
// first step, asleep) has no logarithm: it lies on the bottom edge, as
// does anything below the lowest decade shown; the readout says the
// newest value itself.
//
// createEnergyPlot({hook, colourOf}) draws into #energy-canvas and returns
// {setState(energy), onMessage(msg), select(id), forget(), setVisible(on)}.

import { createChart } from './chart.js';

const SPAN_MS = 60000;
const WIDTH = 280;
const HEIGHT = 84;

// Joules as the readout says them: three digits, an exponent outside
// [0.01, 10000).
export function fmtJ(e) {
  if (e === 0) return '0';
  const a = Math.abs(e);
  return a >= 0.01 && a < 10000 ? e.toPrecision(3) : e.toExponential(2);
}

export function createEnergyPlot({ hook, colourOf }) {
  const figure = document.getElementById('energy');
  const title = document.getElementById('energy-title');
  const readout = document.getElementById('energy-readout');
  const chart = createChart(document.getElementById('energy-canvas'), {
    width: WIDTH, height: HEIGHT, left: 42, span: SPAN_MS, scale: 'log', unit: 'J',
  });
  const series = new Map(); // instance id -> [{t, e, frame}], oldest first
  let available = null;
  let selected = null;
  let newest = null; // the time of the relay's newest reading
  let visible = true;

  function draw() {
    figure.hidden = !visible || selected === null;
    const list = series.get(selected) ?? [];
    const now = newest ?? Date.now();
    const axis = chart.frame(now, list.map((p) => p.e));
    const colour = selected === null ? '#8a919e' : colourOf(selected);
    chart.line(list.map((p) => ({ t: p.t, v: p.e })), { colour, width: 2 });
    const last = list.length > 0 ? list[list.length - 1] : null;
    let text;
    if (available === false) text = 'clothd does not report it';
    else if (selected === null) text = 'select an instance';
    else if (!last) text = 'waiting for clothd';
    else if (last.e === null) text = 'not a number';
    else text = `${fmtJ(last.e)} J · frame ${last.frame ?? '–'}`;
    title.textContent = selected === null ? 'kinetic energy' : `kinetic energy #${selected}`;
    readout.textContent = text;
    // values: what is plotted ([t, energy, frame], the newest last);
    // lastXY: where the newest point is drawn, in the canvas's CSS pixels.
    hook.energy = {
      available, visible: !figure.hidden, instance: selected, scale: 'log', unit: 'J',
      samples: list.length, values: list.map((p) => [p.t, p.e, p.frame]), last: last && { t: last.t, e: last.e, frame: last.frame },
      peak: list.reduce((m, p) => (p.e > m ? p.e : m), 0),
      minY: axis.min, maxY: axis.max, labels: axis.labels, geometry: chart.geometry, colour,
      lastXY: last && last.e !== null ? [axis.x(last.t), axis.y(last.e)] : null, readout: text,
    };
  }

  function trim(list) {
    while (list.length > 0 && list[0].t < newest - SPAN_MS) list.shift();
  }

  draw();
  return {
    // The relay's minute so far (hello's `energy`).
    setState(energy) {
      series.clear();
      available = energy?.available ?? null;
      newest = null;
      for (const [id, list] of Object.entries(energy?.series ?? {})) {
        series.set(Number(id), list.map(([t, e, frame]) => ({ t, e, frame })));
        for (const [t] of list) newest = Math.max(newest ?? t, t);
      }
      draw();
    },
    // One reading of every live instance: {t, values: [[id, e, frame]]}.
    onMessage(msg) {
      if (msg.available === false) {
        available = false;
        series.clear();
        draw();
        return;
      }
      available = true;
      if (!Array.isArray(msg.values)) return;
      newest = msg.t;
      const live = new Set();
      for (const [id, e, frame] of msg.values) {
        live.add(id);
        let list = series.get(id);
        if (!list) series.set(id, (list = []));
        list.push({ t: msg.t, e, frame });
        trim(list);
      }
      for (const id of [...series.keys()]) if (!live.has(id)) series.delete(id);
      if (visible && selected !== null) draw();
    },
    select(id) {
      selected = id;
      draw();
    },
    // Lost clothd: a new process may reuse the ids.
    forget() {
      series.clear();
      newest = null;
      draw();
    },
    setVisible(on) {
      visible = !!on;
      draw();
    },
  };
}
