// The kinetic-energy plot (issue 12), in headless Chromium against the real
// clothd: a cloth dropped onto a sphere and, beside it, a curtain pinned
// along its top row, stepped by the test (the fall slowly, so that the
// relay's four readings a second catch it, then faster). With the cloth
// selected the plot shows its energy rising from 0 through the fall and
// decaying after the impact below 1% of its peak; the relay reads about
// four times a second; the newest value plotted is `get`'s kineticEnergy
// for the same frame, drawn in the cloth's colour at its row of the log
// axis, which holds both the peak and the settled value. With the curtain
// selected the plot shows the curtain's own energy. Screenshots:
// viewer-energy-*.png.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/energy.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { fmtJ } from '../public/energy.js';
import {
  ARTIFACTS, CLOTHD_BIN, launchChromium, sleep, startClothd, startViewer, waitFor, requireTools,
  tearDown, openViewerPage
} from './harness.js';

const DT = 1 / 60;
const N = 16;
const S = 0.06;
const SETTLED = 0.01; // the settled energy's bound, as a fraction of the peak

describe('the kinetic-energy plot in headless Chromium', { timeout: 60000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let cloth;
  let curtain;
  let run; // {from, to, readings}: the stepping's wall-clock span and the relay's readings in it
  const pageErrors = [];

  const hook = () => page.evaluate(() => window.__clothd);
  const shot = (name) => page.screenshot({ path: path.join(ARTIFACTS, `viewer-energy-${name}.png`) });
  const step = () => driver.request('step', { dt: DT, instances: [cloth, curtain] });
  // The plot's state and its canvas's pixels, read in one task of the page.
  const plotted = () => page.evaluate(() => {
    const c = document.getElementById('energy-canvas');
    const img = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    return { p: window.__clothd.energy, png: { width: img.width, height: img.height, rgba: Array.from(img.data) } };
  });

  before(async () => {
    requireTools();
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    // A 0.9 m square half a metre above a sphere of 0.3 m whose friction
    // holds it: it meets the sphere about 19 steps in.
    const half = ((N - 1) * S) / 2;
    cloth = (await driver.request('create', {
      width: N, height: N, spacing: S, origin: [-half, 1.6, -half], right: [1, 0, 0], down: [0, 0, 1],
    })).instance;
    await driver.request('addCollider', {
      instance: cloth, type: 'sphere', position: [0, 0.8, 0], radius: 0.3, friction: 0.6, staticFriction: 0.9,
    });
    curtain = (await driver.request('create', {
      width: 8, height: 8, spacing: 0.08, origin: [1.2, 1.8, 0], right: [1, 0, 0], down: [0, -1, 0],
    })).instance;
    await driver.request('pin', { instance: curtain, particles: [0, 7] });
    await driver.request('wind', { instance: curtain, wind: [0, 0, 3] });
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 720 });
    await waitFor('both drawn', async () => {
      const h = await hook();
      return h.rendered[cloth] === 0 && h.rendered[curtain] === 0;
    });
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    await waitFor('the plot with readings before the first step', async () => {
      const e = (await hook()).energy;
      return e.instance === cloth && e.visible && e.samples >= 2;
    });
    // The fall at a quarter of real time (45 ms a step), the rest at
    // about real time or faster.
    const from = Date.now();
    for (let i = 1; i <= 30; i++) {
      await step();
      await sleep(45);
    }
    for (let i = 31; i <= 180; i++) {
      await step();
      await sleep(8);
    }
    const to = Date.now();
    run = { from, to };
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  it('shows the dropped cloth\'s energy rising through the fall and decaying after the impact', async () => {
    const g = await driver.request('get', { instance: cloth });
    assert.equal(g.frame, 180);
    const p = await waitFor('the plot at the last step', async () => {
      const e = (await hook()).energy;
      return e.last?.frame === g.frame ? e : null;
    });
    const values = p.values.filter(([t]) => t >= run.from && t <= run.to + 250);
    const readings = values.length / ((run.to - run.from) / 1000);
    const energies = p.values.map(([, e]) => e);
    const peakAt = energies.indexOf(p.peak);
    const rising = p.values.slice(0, peakAt + 1).filter(([, e]) => e > 0);
    console.log(`# energy: ${p.values.length} readings, ${readings.toFixed(1)}/s while stepping; `
      + `rising ${rising.map(([, e, f]) => `${e.toExponential(2)} J @${f}`).join(', ')}; `
      + `peak ${p.peak.toExponential(3)} J, last ${p.last.e.toExponential(3)} J @${p.last.frame}; axis ${p.labels.bottom} to ${p.labels.top}`);
    assert.ok(readings >= 3 && readings <= 5.5, `about four readings a second: ${readings.toFixed(2)}`);
    assert.equal(p.values[0][1], 0, 'before the first step the energy is 0');
    assert.ok(p.peak > 0.5, `the fall's peak: ${p.peak} J`);
    assert.ok(rising.length >= 2 && rising[0][1] < p.peak / 2, `the fall's readings before the peak: ${JSON.stringify(rising)}`);
    for (let i = 1; i < rising.length; i++) {
      assert.ok(rising[i][1] >= rising[i - 1][1], `the energy grows through the fall: ${JSON.stringify(rising)}`);
    }
    assert.ok(p.values[peakAt][2] < 30, `the peak comes in the fall, at frame ${p.values[peakAt][2]}`);
    assert.ok(p.last.e < SETTLED * p.peak, `settled below ${SETTLED * 100}% of the peak: ${p.last.e} J of ${p.peak} J`);
    // The log axis holds both: the peak under its top, the settled value
    // above its bottom (not clamped onto it).
    assert.equal(p.scale, 'log');
    assert.match(p.labels.bottom, / J$/);
    assert.ok(p.maxY >= p.peak && p.minY <= p.last.e, `axis ${p.minY} to ${p.maxY} J holds ${p.last.e} and ${p.peak}`);
    await shot('settled');
  });

  it('plots get\'s kineticEnergy as its newest value, in the cloth\'s colour at its row', async () => {
    const g = await driver.request('get', { instance: cloth });
    // A second of readings since the last step: the line's newest four
    // pixels are level at the settled value.
    await waitFor('a second of readings at rest', async () => {
      const v = (await hook()).energy.values.filter(([, , f]) => f === g.frame);
      return v.length >= 2 && v[v.length - 1][0] - v[0][0] >= 1000;
    });
    const { p, png } = await plotted();
    assert.equal(p.last.frame, g.frame);
    const k = g.kineticEnergy;
    assert.ok(Math.abs(p.last.e - k) <= 1e-12 + 1e-9 * k, `plotted ${p.last.e} J, get says ${k} J`);
    assert.equal(await page.locator('#energy-readout').textContent(), `${fmtJ(k)} J · frame ${g.frame}`);
    assert.match(await page.locator('#energy-title').textContent(), new RegExp(`#${cloth}$`));
    // Where the axis says k lies: its decade between the labelled ones.
    const { top, bottom } = p.geometry;
    const expectY = bottom - ((Math.log10(k) - Math.log10(p.minY)) / (Math.log10(p.maxY) - Math.log10(p.minY))) * (bottom - top);
    assert.ok(Math.abs(p.lastXY[1] - expectY) < 0.5, `drawn at y ${p.lastXY[1]}, the axis puts ${k} J at ${expectY}`);
    // The canvas there: the cloth's colour, in the newest three columns,
    // only within a line's width of that row.
    const [r, gr, b] = [1, 3, 5].map((i) => parseInt(p.colour.slice(i, i + 2), 16));
    const sx = png.width / p.geometry.width;
    const sy = png.height / p.geometry.height;
    const rows = [];
    for (let x = Math.floor((p.lastXY[0] - 3) * sx); x < Math.floor((p.lastXY[0] - 0.5) * sx); x++) {
      for (let y = 0; y < png.height; y++) {
        const i = 4 * (y * png.width + x);
        const near = Math.abs(png.rgba[i] - r) < 40 && Math.abs(png.rgba[i + 1] - gr) < 40 && Math.abs(png.rgba[i + 2] - b) < 40;
        if (png.rgba[i + 3] > 128 && near) rows.push((y + 0.5) / sy);
      }
    }
    assert.ok(rows.length >= 3, `the line in ${p.colour} at the right end: ${rows.length} pixels`);
    const mean = rows.reduce((a, v) => a + v, 0) / rows.length;
    assert.ok(Math.abs(mean - expectY) < 1, `the line's end at y ${mean.toFixed(1)}, where ${k} J lies: ${expectY.toFixed(1)}`);
    assert.ok(rows.every((y) => Math.abs(y - expectY) < 2.5), `nothing else there: rows ${rows.map((y) => y.toFixed(1))}`);
    await page.locator('#energy').screenshot({ path: path.join(ARTIFACTS, 'viewer-energy-plot.png') });
  });

  it('follows the selection: the curtain\'s own energy', async () => {
    await page.locator(`#instances li[data-instance="${curtain}"]`).click();
    const g = await driver.request('get', { instance: curtain });
    const c = await driver.request('get', { instance: cloth });
    const p = await waitFor('the curtain plotted', async () => {
      const e = (await hook()).energy;
      return e.instance === curtain && e.last?.frame === g.frame ? e : null;
    });
    assert.ok(Math.abs(p.last.e - g.kineticEnergy) <= 1e-12 + 1e-9 * g.kineticEnergy, `plotted ${p.last.e} J, get says ${g.kineticEnergy} J`);
    assert.ok(Math.abs(p.last.e - c.kineticEnergy) > 1e-6, `not the cloth's ${c.kineticEnergy} J`);
    assert.equal(p.colour, (await hook()).colours[curtain]);
    assert.match(await page.locator('#energy-title').textContent(), new RegExp(`#${curtain}$`));
    await page.keyboard.press('Escape');
    await waitFor('no plot without a selection', async () => (await hook()).energy.visible === false);
    assert.equal(await page.locator('#energy').isVisible(), false);
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
