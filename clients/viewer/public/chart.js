// The one chart of the viewer's plots (issue 12): the step-time plot
// (plot.js) and the kinetic-energy plot (energy.js) both draw through it.
// A chart is a canvas of fixed CSS size showing the last `span` ms up to
// the newest sample at its right edge, with a value axis on the left whose
// scale fits the values it is given, labelled at its top and bottom:
//
// - 'linear': from 0 to the smallest 1, 2, 5 × 10^k above 1.15 × the
//   largest value (at least `minTop`); the bottom label says "0 <unit>".
// - 'log': whole decades, from the decade of the smallest positive value
//   to the one above the largest, at least MIN_DECADES and at most
//   MAX_DECADES of them (a value below the bottom, 0 included, is drawn
//   on the bottom edge); faint lines mark the decades between, and the
//   labels read 10^k (with the unit at the bottom).
//
// createChart(canvas, opts) returns {frame(now, values), line(points,
// style), ticks(list, style), geometry}: frame() clears the canvas, fits
// the scale to `values`, draws the axis and returns it ({x(t), y(v), min,
// max, top, bottom, labels}); line() and ticks() draw on that axis.

const AXIS = '#2a2e37';
const GRID = '#22262e';
const TEXT = '#8a919e';
const FONT = '10px ui-monospace, "DejaVu Sans Mono", monospace';
const MIN_DECADES = 3;
const MAX_DECADES = 9;

// The smallest of 1, 2, 5 × 10^k at or above v.
export function niceCeil(v) {
  const k = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * k >= v) return m * k;
  return 10 * k;
}

const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };
// 10^k as text: "10⁻³".
export const decade = (k) => `10${String(k).replace(/./g, (c) => SUPERSCRIPT[c] ?? c)}`;

// The decades [lo, hi] a log axis shows for these values.
export function logRange(values) {
  let least = Infinity;
  let most = 0;
  for (const v of values) {
    if (!(v > 0) || !Number.isFinite(v)) continue;
    least = Math.min(least, v);
    most = Math.max(most, v);
  }
  if (most === 0) return { lo: -MIN_DECADES, hi: 0 };
  const hi = Math.ceil(Math.log10(most) + 0.02); // a hair of room above the largest
  let lo = Math.floor(Math.log10(least));
  lo = Math.max(lo, hi - MAX_DECADES);
  lo = Math.min(lo, hi - MIN_DECADES);
  return { lo, hi };
}

// opts: width, height (CSS pixels, the canvas's), left (the labels'
// margin), span (ms), scale ('linear' | 'log'), unit, format(v) (the
// linear top label), minTop (the linear scale's least top).
export function createChart(canvas, {
  width, height, left = 30, span = 60000, scale = 'linear', unit = '', format = String, minTop = 1,
}) {
  const ctx = canvas.getContext('2d');
  const dpr = Math.min(window.devicePixelRatio || 1, 2);
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const top = 4;
  const bottom = height - 4;
  let axis = null;

  function label(text, y, baseline) {
    ctx.textBaseline = baseline;
    ctx.fillText(text, left - 4, y);
  }

  function rule(y, colour) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(left, Math.round(y) + 0.5);
    ctx.lineTo(width, Math.round(y) + 0.5);
    ctx.stroke();
  }

  function frame(now, values) {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const x = (t) => left + ((t - (now - span)) / span) * (width - left - 2);
    ctx.fillStyle = TEXT;
    ctx.font = FONT;
    ctx.textAlign = 'right';
    if (scale === 'log') {
      const { lo, hi } = logRange(values);
      const y = (v) => {
        const k = v > 0 ? Math.min(Math.max(Math.log10(v), lo), hi) : lo;
        return bottom - ((k - lo) / (hi - lo)) * (bottom - top);
      };
      for (let k = lo + 1; k < hi; k++) rule(y(10 ** k), GRID);
      rule(top, AXIS);
      rule(bottom, AXIS);
      const labels = { top: decade(hi), bottom: `${decade(lo)} ${unit}` };
      label(labels.top, top, 'top');
      label(labels.bottom, bottom + 2, 'bottom');
      axis = { x, y, min: 10 ** lo, max: 10 ** hi, lo, hi, top, bottom, labels };
    } else {
      let peak = 0;
      for (const v of values) if (Number.isFinite(v)) peak = Math.max(peak, v);
      const max = niceCeil(Math.max(peak * 1.15, minTop));
      const y = (v) => bottom - (v / max) * (bottom - top);
      rule(top, AXIS);
      rule(bottom, AXIS);
      const labels = { top: format(max), bottom: `0 ${unit}` };
      label(labels.top, top, 'top');
      label(labels.bottom, bottom + 2, 'bottom');
      axis = { x, y, min: 0, max, top, bottom, labels };
    }
    return axis;
  }

  // A polyline through points {t, v}; a point whose v is null (or not a
  // finite number) breaks it. style: colour, width, dash ([] solid), and
  // lead (CSS pixels drawn before the first point of each run).
  function line(points, { colour, width: w = 2, dash = [], lead = 0 }) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = w;
    ctx.setLineDash(dash);
    ctx.beginPath();
    let pen = false;
    for (const p of points) {
      if (p.v === null || !Number.isFinite(p.v)) {
        pen = false;
        continue;
      }
      const px = axis.x(p.t);
      const py = axis.y(p.v);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px - lead, py);
      pen = true;
    }
    ctx.stroke();
    ctx.setLineDash([]);
  }

  // Vertical marks {t, from, to} (values), clipped to the axis.
  function ticks(list, { colour, width: w = 2 }) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = w;
    ctx.beginPath();
    for (const k of list) {
      ctx.moveTo(axis.x(k.t), axis.y(Math.min(k.from, axis.max)));
      ctx.lineTo(axis.x(k.t), Math.max(axis.y(Math.min(k.to, axis.max)), top));
    }
    ctx.stroke();
  }

  return { frame, line, ticks, geometry: { width, height, left, top, bottom } };
}
