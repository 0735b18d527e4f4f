// The viewer's simulation controls, step-time plot and panel layout (issue
// 12), in headless Chromium against the real clothd, while a stand-in game
// server steps a curtain and a soft ball 60 times a second with a 5 ms
// budget, as demo.js does:
// - space pauses every instance (clothd's step skips them: their frame
//   numbers stand while the game server steps on), "." steps the paused
//   ones once by their own dt, R resets the selected one to the frame the
//   viewer first saw it at (the other keeps its steps), space resumes;
// - the plot draws clothd's step time and the 5 ms budget line;
// - on a 1280 × 720 window with the curtain selected the Display section is
//   in view without scrolling, and the state badges lie inside their rows.
// Screenshots: viewer-controls-*.png.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/controls.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CLOTHD_BIN, launchChromium, sleep, startClothd, startViewer, waitFor, requireTools,
  tearDown, openViewerPage
} from './harness.js';

const DT = 1 / 60;
const BUDGET_MS = 5;

describe('pause, step, reset, the step-time plot and the panel in headless Chromium', { timeout: 90000 }, () => {
  let clothd;
  let viewer;
  let driver;  // the test's own requests
  let game;    // the stand-in game server's connection
  let browser;
  let page;
  let cloth;
  let ball;
  let spare;
  let stepping = true;
  let loop;
  const pageErrors = [];

  const hook = () => page.evaluate(() => window.__clothd);
  const get = (id) => driver.request('get', { instance: id });
  const shot = (name) => page.screenshot({ path: path.join(ARTIFACTS, `viewer-controls-${name}.png`) });

  before(async () => {
    requireTools();
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    game = await ClothdConnection.connect('127.0.0.1', clothd.port);
    const W = 16;
    cloth = (await driver.request('create', {
      width: W, height: 16, spacing: 0.1, origin: [-0.75, 2, 0], right: [1, 0, 0], down: [0, -1, 0],
    })).instance;
    await driver.request('pin', { instance: cloth, particles: [...Array(W).keys()] });
    await driver.request('wind', { instance: cloth, wind: [0.5, 0, 2] });
    ball = (await driver.request('create', { type: 'softbody', shape: 'ball', radius: 0.3, resolution: 5, center: [1.3, 1, 0] })).instance;
    await driver.request('addCollider', { instance: ball, type: 'plane', position: [0, 0, 0], normal: [0, 1, 0] });
    // A third, disabled by someone else: the viewer neither pauses nor resumes it.
    spare = (await driver.request('create', { type: 'softbody', shape: 'ball', radius: 0.2, resolution: 4, center: [-1.6, 0.5, 0] })).instance;
    await driver.request('enable', { instance: spare, enabled: false });
    // The game server: both instances by id, 60 times a second, 5 ms budget.
    loop = (async () => {
      while (stepping) {
        await game.request('step', { dt: DT, instances: [cloth, ball], budgetMs: BUDGET_MS });
        await sleep(16);
      }
    })();
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 720 });
    await waitFor('both drawn and their reset points saved', async () => {
      const h = await hook();
      return h.rendered[cloth] > 0 && h.rendered[ball] > 0 && h.sim.reset.points[cloth] !== undefined && h.sim.reset.points[ball] !== undefined;
    });
  });

  after(async () => {
    stepping = false;
    await loop?.catch(() => {});
    await tearDown({ browser, connections: [driver, game], viewers: [viewer], clothd });
  });

  it('pauses every running instance with space, while the game server steps on', async () => {
    assert.equal(await page.locator('#sim-state').textContent(), 'running');
    await page.locator('#scene').click({ position: { x: 5, y: 400 } }); // focus on the view, nothing selected
    await page.keyboard.press(' ');
    await waitFor('paused', async () => (await hook()).sim.paused && (await hook()).sim.pausedIds.length === 2);
    const h = await hook();
    assert.deepEqual([...h.sim.pausedIds].sort(), [cloth, ball].sort(), 'the disabled third is not the viewer\'s');
    const st = await driver.request('status');
    const enabled = Object.fromEntries(st.instances.map((s) => [s.instance, s.enabled]));
    assert.deepEqual([enabled[cloth], enabled[ball], enabled[spare]], [false, false, false]);
    const frames = [(await get(cloth)).frame, (await get(ball)).frame];
    await sleep(400); // about 20 game steps
    assert.deepEqual([(await get(cloth)).frame, (await get(ball)).frame], frames, 'no step moves a paused instance');
    await waitFor('"paused" badges', async () => (await page.locator(`#instances li[data-instance="${cloth}"] .flag`).textContent()) === 'paused');
    assert.equal(await page.locator(`#instances li[data-instance="${ball}"] .flag`).textContent(), 'paused');
    assert.equal(await page.locator(`#instances li[data-instance="${spare}"] .flag`).textContent(), 'disabled');
    assert.match(await page.locator('#sim-pause').textContent(), /Resume/);
    assert.match(await page.locator('#sim-state').textContent(), /^paused \(2\)/);
  });

  it('steps the paused instances once per "." by their own dt', async () => {
    const a0 = await get(cloth);
    const b0 = await get(ball);
    await page.keyboard.press('.');
    await waitFor('one step', async () => (await get(cloth)).frame === a0.frame + 1);
    const a1 = await get(cloth);
    assert.equal((await get(ball)).frame, b0.frame + 1);
    assert.ok(Math.abs(a1.time - a0.time - DT) < 1e-6, `one step of the game's dt: ${a1.time - a0.time}`);
    assert.notDeepEqual(a1.positions, a0.positions, 'the curtain moved');
    await page.locator('#sim-step').click();
    await page.keyboard.press('.');
    await waitFor('three steps', async () => (await get(cloth)).frame === a0.frame + 3);
    await waitFor('the page shows them', async () => (await hook()).rendered[cloth] === a0.frame + 3);
    await sleep(300);
    assert.equal((await get(cloth)).frame, a0.frame + 3, 'still paused after the steps');
    assert.equal((await driver.request('get', { instance: cloth })).enabled, false);
    assert.equal((await hook()).sim.steps, 3);
    await shot('paused');
  });

  it('resets the selected instance to the frame the viewer first saw, paused still', async () => {
    const point = (await hook()).sim.reset.points[cloth];
    const ballFrame = (await get(ball)).frame;
    assert.ok(point >= 0 && point < (await get(cloth)).frame - 3, `reset point: frame ${point}`);
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    assert.equal(await page.locator('#sim-reset .text').textContent(), `Reset #${cloth}`);
    assert.match(await page.locator('#selection').textContent(), new RegExp(`reset\\s*to frame ${point} `));
    await page.locator('#scene').focus();
    await page.keyboard.press('r');
    await waitFor(`the curtain back at frame ${point}`, async () => (await get(cloth)).frame === point);
    const back = await get(cloth);
    assert.equal(back.enabled, false, 'paused still');
    assert.ok(Math.abs(back.time - point * DT) < 1e-6, `its time too: ${back.time}`);
    assert.equal((await get(ball)).frame, ballFrame, 'the ball is not reset');
    await waitFor('the page draws the reset frame', async () => (await hook()).rendered[cloth] === point);
    await sleep(300);
    assert.equal((await get(cloth)).frame, point, 'no step after the reset while paused');
  });

  it('resumes with space: the game server\'s steps move both again, the third stays disabled', async () => {
    const a = (await get(cloth)).frame;
    const b = (await get(ball)).frame;
    await page.locator('#scene').click({ position: { x: 5, y: 400 } }); // clears the selection too
    await page.keyboard.press(' ');
    await waitFor('running', async () => !(await hook()).sim.paused);
    await waitFor('steps again', async () => (await get(cloth)).frame > a + 5 && (await get(ball)).frame > b + 5);
    assert.equal((await get(spare)).enabled, false, 'not the viewer\'s to enable');
    assert.equal(await page.locator('#sim-state').textContent(), 'running');
  });

  it('plots clothd\'s step time with the 5 ms budget line', async () => {
    const h = await waitFor('five seconds of samples with a budget', async () => {
      const p = (await hook()).plot;
      return p.budgetRun >= 10 && p.last?.meanMs > 0 && p.last?.budgetMs !== null ? p : null;
    }, 15000);
    assert.ok(Math.abs(h.last.budgetMs - BUDGET_MS) < 1e-3, `budget ${h.last.budgetMs} ms`);
    assert.ok(h.maxY >= BUDGET_MS, `the scale holds the budget: ${h.maxY} ms`);
    assert.match(h.readout, /ms · \d+\/s · budget 5\.0/);
    // The budget's dashed amber row (dashes 5 on, 3 off) along its newest
    // run, and the blue step time, on the canvas.
    // The canvas's pixels and the plot's state read in one task of the page
    // (a new sample may rescale the plot at any time between two calls).
    const { p, png } = await page.evaluate(() => {
      const c = document.getElementById('plot-canvas');
      const img = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      return { p: window.__clothd.plot, png: { width: img.width, height: img.height, rgba: Array.from(img.data) } };
    });
    await page.locator('#plot').screenshot({ path: path.join(ARTIFACTS, 'viewer-controls-plot.png') });
    const sx = png.width / 280; // the canvas holds devicePixelRatio pixels per CSS pixel
    const sy = png.height / 84;
    const from = Math.floor(p.budgetFrom * sx) - 2;
    const to = Math.ceil(278 * sx);
    // Straight from the canvas: transparent but for what is drawn, colours
    // not blended with the background; the faint edges of lines left out.
    const isAmber = (i) => png.rgba[i + 3] > 128 && png.rgba[i] > 150 && png.rgba[i + 1] > 100 && png.rgba[i + 2] < 110 && png.rgba[i] - png.rgba[i + 2] > 80;
    const columns = new Set();
    let astray = 0;
    let blue = 0;
    for (let y = 0; y < png.height; y++) {
      for (let x = 0; x < png.width; x++) {
        const i = 4 * (y * png.width + x);
        if (png.rgba[i + 3] > 128 && png.rgba[i + 2] > 180 && png.rgba[i + 2] - png.rgba[i] > 100) blue++;
        if (!isAmber(i)) continue;
        if (Math.abs(y + 0.5 - p.budgetY * sy) <= 1.5 * sy) {
          if (x >= from && x < to) columns.add(x);
          continue;
        }
        astray++;
      }
    }
    assert.ok(columns.size >= 0.45 * (to - from), `the budget line at y ${p.budgetY}: ${columns.size} amber columns of ${to - from}`);
    assert.equal(astray, 0, 'amber only on the budget line');
    assert.ok(blue > 20, `the step time: ${blue} blue pixels`);
  });

  it('keeps Display in view on a 1280 × 720 window with an instance selected', async () => {
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    await waitFor('the selection shown', async () => (await page.locator('#selection dt').count()) > 8);
    // Measured in one go: the panel's scroll, the section's box, its controls'.
    const m = await page.evaluate(() => {
      const box = (sel) => {
        const r = document.querySelector(sel).getBoundingClientRect();
        return { top: r.top, bottom: r.bottom, width: r.width };
      };
      const ids = ['#debug-toggle', '#shadow-toggle', '#plot-toggle', '#energy-toggle', '#grid-toggle', '#frame-selected', '#frame-all'];
      return {
        scrollTop: document.getElementById('panel').scrollTop,
        window: window.innerHeight,
        display: box('#sec-display'),
        selection: box('#sec-selection'),
        controls: Object.fromEntries(ids.map((id) => [id, box(id)])),
      };
    });
    console.log(`# layout: selection ${Math.round(m.selection.top)}-${Math.round(m.selection.bottom)}, display ${Math.round(m.display.top)}-${Math.round(m.display.bottom)} of ${m.window} px`);
    assert.equal(m.window, 720);
    assert.equal(m.scrollTop, 0);
    assert.ok(m.display.top >= 0 && m.display.bottom <= 720,
      `the Display section spans ${Math.round(m.display.top)} to ${Math.round(m.display.bottom)} px of 720`);
    for (const [id, b] of Object.entries(m.controls)) {
      assert.ok(b.width > 0 && b.top >= m.display.top && b.bottom <= 720, `${id} shown within the window: ${JSON.stringify(b)}`);
    }
    await shot('selected');
  });

  it('shows the state badges whole inside their rows', async () => {
    await page.keyboard.press(' '); // paused: two "paused" badges, and the third's "disabled"
    await waitFor('paused', async () => (await hook()).sim.paused);
    await waitFor('badges', async () => (await page.locator('#instances li .flag:visible').count()) === 3);
    const rows = await page.evaluate((ids) => {
      const plain = (r) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
      const panel = plain(document.getElementById('panel').getBoundingClientRect());
      return ids.map((id) => {
        const li = document.querySelector(`#instances li[data-instance="${id}"]`);
        const flag = li.querySelector('.flag');
        const name = li.querySelector('.name');
        return {
          id, panel, text: flag.textContent,
          row: plain(li.getBoundingClientRect()),
          flag: plain(flag.getBoundingClientRect()),
          name: plain(name.getBoundingClientRect()),
          // The badge's text wider than its box: cut by its own overflow.
          cut: flag.scrollWidth > flag.clientWidth + 1,
        };
      });
    }, [cloth, ball, spare]);
    for (const { id, text, row, flag, name, panel, cut } of rows) {
      const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
      assert.ok(inside(flag, row), `#${id}'s "${text}" badge ${JSON.stringify(flag)} inside its row ${JSON.stringify(row)}`);
      assert.ok(inside(flag, name), `#${id}'s badge inside the name column ${JSON.stringify(name)}, not under the numbers`);
      assert.ok(inside(flag, panel), `#${id}'s badge inside the panel`);
      assert.equal(cut, false, `#${id}'s badge text is whole`);
    }
    await shot('badges');
    await page.keyboard.press(' ');
    await waitFor('running', async () => !(await hook()).sim.paused);
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
