// The viewer as a person uses it: the real clothd, the viewer server and
// headless Chromium (Debian's, driven by playwright-core). A curtain in the
// wind must show up in the panel and on the canvas, move between two
// screenshots, follow the debug flag set from another client, and the
// page's wind control must reach clothd; a soft ball beside it must be drawn
// from its topology, in its own colour, and show when it sleeps.
// Screenshots go to $VIEWER_ARTIFACTS (default build/artifacts/).
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/
//   CHROMIUM=/usr/bin/chromium (default)   VIEWER_UPDATE_SCREENSHOT=1 refreshes screenshot.png

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import WebSocket from 'ws';
import { ClothdConnection } from '../lib/clothd.js';
import { decodeFrame } from '../public/frame.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CLOTHD_BIN, CHROMIUM, VIEWER_DIR, launchChromium, sleep, startClothd, startViewer,
  stop, waitFor, requireTools, tearDown, openViewerPage
} from './harness.js';

const W = 24;
const H = 24;

// Cloth-coloured pixels: the first instance's orange (#e8743b) under any
// light: red well above green, green above blue. The background, the grid,
// the grey-blue colliders and the red pin markers all fail it.
function clothPixels(img) {
  let n = 0;
  for (let i = 0; i < img.rgba.length; i += 4) {
    const r = img.rgba[i];
    const g = img.rgba[i + 1];
    const b = img.rgba[i + 2];
    if (r > 90 && r - g > 40 && g - b > 15) n++;
  }
  return n;
}

// Pixels of a colour's hue (within 20 degrees), saturated and lit enough
// that shading keeps them: a soft body's green survives its light and
// shadow, while the background, grid, colliders (grey-blue), selection box
// (blue), pins (red) and the orange cloth all fall outside.
function huePixels(img, hex) {
  const hsv = (r, g, b) => {
    const max = Math.max(r, g, b);
    const d = max - Math.min(r, g, b);
    let h = 0;
    if (d > 0) {
      if (max === r) h = 60 * (((g - b) / d) % 6);
      else if (max === g) h = 60 * ((b - r) / d + 2);
      else h = 60 * ((r - g) / d + 4);
    }
    return { h: (h + 360) % 360, s: max ? d / max : 0, v: max / 255 };
  };
  const c = parseInt(hex.slice(1), 16);
  const want = hsv(c >> 16, (c >> 8) & 0xff, c & 0xff).h;
  let n = 0;
  for (let i = 0; i < img.rgba.length; i += 4) {
    const p = hsv(img.rgba[i], img.rgba[i + 1], img.rgba[i + 2]);
    const dh = Math.abs(p.h - want);
    if (p.s > 0.35 && p.v > 0.15 && Math.min(dh, 360 - dh) < 20) n++;
  }
  return n;
}

function changedPixels(a, b) {
  assert.equal(a.rgba.length, b.rgba.length);
  let n = 0;
  for (let i = 0; i < a.rgba.length; i += 4) {
    const d = Math.abs(a.rgba[i] - b.rgba[i]) + Math.abs(a.rgba[i + 1] - b.rgba[i + 1]) + Math.abs(a.rgba[i + 2] - b.rgba[i + 2]);
    if (d > 30) n++;
  }
  return n;
}

// A stand-in for an older clothd: one 4 x 3 cloth, every command the viewer
// uses but `topology` (unknown_command), and no windModel/wind/gravity in
// `get`. Enough to watch the page fall back to drawing the grid itself.
function startOldClothd() {
  const w = 4;
  const h = 3;
  const positions = [];
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) positions.push(-0.3 + 0.2 * x, 1.5 - 0.2 * y, 0);
  const frame = Buffer.alloc(40 + 12 * w * h);
  Buffer.from([0x89, 0x43, 0x4c, 0x46]).copy(frame, 0);
  frame.writeUInt16LE(1, 4);
  frame.writeUInt32LE(frame.length, 8);
  frame.writeUInt32LE(1, 12);
  frame.writeUInt32LE(w * h, 32);
  positions.forEach((v, i) => frame.writeFloatLE(v, 40 + 4 * i));
  const summary = { instance: 1, type: 'cloth', particles: w * h, constraints: 29, colliders: 0, enabled: true, unstable: false, frame: 0 };
  const server = net.createServer((sock) => {
    sock.on('error', () => {});
    readline.createInterface({ input: sock }).on('line', (line) => {
      const req = JSON.parse(line);
      const ok = (r) => sock.write(JSON.stringify({ id: req.id, ok: true, ...r }) + '\n');
      if (req.cmd === 'subscribe') {
        ok({ all: true });
        sock.write(frame);
      } else if (req.cmd === 'status') {
        ok({ instances: [summary], workers: 1, globalWind: [0, 0, 0], version: '0.0.9', debug: false, text: '' });
      } else if (req.cmd === 'get' && req.instance === 1) {
        ok({ instance: 1, type: 'cloth', width: w, height: h, frame: 0, time: 0, enabled: true, unstable: false, positions, pinned: [], colliders: [] });
      } else {
        sock.write(JSON.stringify({ id: req.id, ok: false, error: { code: 'unknown_command', message: `unknown command "${req.cmd}"` } }) + '\n');
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port })));
}

describe('viewer against a live clothd in headless Chromium', { timeout: 90000 }, () => {
  let clothd;
  let viewer;
  let driver;   // the test's own clothd connection (steps, creates)
  let browser;
  let page;
  let cloth;
  let ball;
  const pageErrors = [];

  // Steps the curtain and the ball n times, paced so the page sees the motion.
  async function step(n, pauseMs = 8) {
    for (let i = 0; i < n; i++) {
      await driver.request('step', { dt: 1 / 60, instances: [cloth, ball] });
      if (pauseMs) await sleep(pauseMs);
    }
    return (await driver.request('get', { instance: cloth })).frame;
  }

  const hook = () => page.evaluate(() => window.__clothd);

  async function shot(name) {
    const file = path.join(ARTIFACTS, `viewer-${name}.png`);
    const png = await page.locator('#scene').screenshot({ path: file });
    await page.screenshot({ path: path.join(ARTIFACTS, `viewer-${name}-page.png`) });
    return { file, img: decodePng(png) };
  }

  async function waitRendered(frame) {
    await waitFor(`frame ${frame} on screen`, async () => (await hook()).rendered[cloth] >= frame);
    await sleep(100); // the render that followed is on the canvas by now
  }

  before(async () => {
    requireTools();
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    // A curtain hanging from its top row, blown towards the camera (+z)
    // onto a sphere in front of it, above the floor plane.
    const c = await driver.request('create', {
      width: W, height: H, spacing: 0.1, origin: [-1.15, 2.6, 0], right: [1, 0, 0], down: [0, -1, 0],
    });
    cloth = c.instance;
    await driver.request('pin', { instance: cloth, particles: [...Array(W).keys()] });
    await driver.request('wind', { instance: cloth, wind: [0.8, 0, 2.5] });
    await driver.request('addCollider', { instance: cloth, type: 'sphere', position: [0.1, 1.3, 0.55], radius: 0.35 });
    await driver.request('addCollider', { instance: cloth, type: 'plane', position: [0, 0, 0], normal: [0, 1, 0] });
    // A soft ball beside it, dropped onto the same floor.
    ball = (await driver.request('create', {
      type: 'softbody', shape: 'ball', radius: 0.3, resolution: 5, center: [1.5, 1, 0],
    })).instance;
    await driver.request('addCollider', { instance: ball, type: 'plane', position: [0, 0, 0], normal: [0, 1, 0] });
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 800 });
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  it('lists the instance in the panel, connected', async () => {
    const row = page.locator(`#instances li[data-instance="${cloth}"]`);
    await row.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await row.textContent(), new RegExp(`#${cloth}\\s*${W}×${H}`));
    await waitFor('connected state', async () => (await page.locator('#conn').getAttribute('data-state')) === 'connected');
    const h = await hook();
    assert.equal(h.connected, true);
    const meta = h.instances.find((m) => m.instance === cloth);
    assert.equal(meta.width, W);
    assert.equal(meta.pinned.length, W);
    assert.deepEqual(meta.colliders.map((c) => c.type), ['sphere', 'plane']);
    assert.equal(meta.windModel, 'aero');
    assert.deepEqual(meta.wind, [0.800000012, 0, 2.5]); // get's own wind, as clothd prints it
    const soft = page.locator(`#instances li[data-instance="${ball}"]`);
    await soft.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await soft.textContent(), /soft 1\d\d/);
  });

  it('advances the frame counter as clothd steps', async () => {
    await waitFor('the first frame', async () => (await hook()).frames[cloth] !== undefined);
    const before0 = (await hook()).frames[cloth];
    const now = await step(20);
    await waitFor(`frame ${now} in the page`, async () => (await hook()).frames[cloth] === now);
    assert.ok(now >= before0 + 20);
    // The panel shows the frame number and, while frames come, fps and step time.
    const row = page.locator(`#instances li[data-instance="${cloth}"]`);
    await waitFor('frame number in the panel', async () => (await row.locator('.frame').textContent()) === String(now));
  });

  it('shows stats while frames flow', async () => {
    const row = page.locator(`#instances li[data-instance="${cloth}"]`);
    const stepping = step(40, 15);
    await waitFor('fps and step time in the panel', async () => {
      const fps = Number(await row.locator('.fps').textContent());
      const ms = Number(await row.locator('.step').textContent());
      return fps > 0 && ms > 0;
    });
    await stepping;
  });

  let first;
  it('draws the cloth on the canvas', async () => {
    const frame = (await hook()).frames[cloth];
    await waitRendered(frame);
    first = await shot('1');
    // No channels asked for (no --channels): normals computed from the
    // triangles, and no speed colours to offer.
    assert.equal((await hook()).normals[cloth], 'computed');
    assert.equal(await page.locator('#speed-toggle').isDisabled(), true);
    const n = clothPixels(first.img);
    const total = first.img.width * first.img.height;
    assert.ok(n > total * 0.02, `cloth-coloured pixels: ${n} of ${total}`);
  });

  it('moves the cloth between two screenshots', async () => {
    const frame = await step(45);
    await waitRendered(frame);
    const second = await shot('2');
    assert.ok(clothPixels(second.img) > 0);
    const changed = changedPixels(first.img, second.img);
    assert.ok(changed > 2000, `pixels changed between frames: ${changed}`);
  });

  it('selects an instance from the list', async () => {
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    await waitFor('selection', async () => (await hook()).selected === cloth);
    assert.match(await page.locator(`#instances li[data-instance="${cloth}"]`).getAttribute('class'), /selected/);
    const details = await page.locator('#selection').textContent();
    assert.match(details, /24 pinned/);
    assert.match(details, /sphere/);
    assert.match(details, /plane/);
    assert.match(details, /wind model\s*aero/);
    assert.match(details, /\[0\.80, 0\.00, 2\.50\] m\/s \(own\)/);
    await sleep(600); // the camera flies to the selection
    await shot('selected');
  });

  it('draws the soft ball as a mesh from its topology', async () => {
    const topo = await driver.request('topology', { instance: ball });
    const triangles = topo.triangles.length / 3;
    assert.ok(triangles > 0);
    const frame = await step(10);
    await waitRendered(frame);
    await waitFor('the ball on screen', async () => (await hook()).rendered[ball] >= frame);
    const h = await hook();
    assert.deepEqual(h.meshes[ball], { type: 'softbody', kind: 'mesh', source: 'topology', triangles, particles: topo.particles });
    assert.equal(h.topology[ball], triangles);
    // The curtain from its topology too: clothd's grid, two triangles a cell.
    assert.deepEqual(h.meshes[cloth], { type: 'cloth', kind: 'mesh', source: 'topology', triangles: 2 * (W - 1) * (H - 1), particles: W * H });
    assert.notEqual(h.colours[ball], h.colours[cloth]);
    // Everything in view (A), nothing selected: the ball's colour is on the canvas.
    await page.keyboard.press('Escape');
    await page.keyboard.press('a');
    await sleep(700);
    const { img } = await shot('ball');
    const n = huePixels(img, h.colours[ball]);
    const total = img.width * img.height;
    assert.ok(n > total * 0.002, `ball-coloured (${h.colours[ball]}) pixels: ${n} of ${total}`);
    assert.ok(clothPixels(img) > total * 0.01, 'the curtain is in view too');
  });

  it('labels the wind in m/s for the aero curtain, m/s² for a constant-model instance', async () => {
    const unit = page.locator('#wind-unit');
    await page.locator('input[name="wind-scope"][value="global"]').check();
    assert.match(await unit.textContent(), /^m\/s(?!²)/); // curtain and ball are both aero
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    await page.locator('#wind-scope-selected').check();
    await waitFor('m/s for the curtain', async () => /^m\/s(?!²)/.test(await unit.textContent()));
    assert.equal(await page.locator('#wind-x').inputValue(), '0.8'); // its own wind from get
    assert.equal(await page.locator('#wind-z').inputValue(), '2.5');
    // The ball switched to the seed's constant model: its wind is an acceleration.
    await driver.request('set', { instance: ball, windModel: 'constant' });
    await step(2);
    await page.locator(`#instances li[data-instance="${ball}"]`).click();
    await page.locator('#wind-scope-selected').check();
    await waitFor('m/s² for the constant-model ball', async () => /^m\/s²/.test(await unit.textContent()));
    assert.match(await page.locator('#selection').textContent(), /wind model\s*constant/);
    // All instances: m/s while one of them (the curtain) is aero.
    await page.locator('input[name="wind-scope"][value="global"]').check();
    assert.match(await unit.textContent(), /^m\/s(?!²)/);
    assert.match(await page.locator('#wind-note').textContent(), /1 with the constant model/);
    await driver.request('set', { instance: ball, windModel: 'aero' });
    await step(2);
    await waitFor('the ball aero again', async () => (await hook()).instances.find((m) => m.instance === ball)?.windModel === 'aero');
  });

  it('pictures the curtain and the ball for the README', async () => {
    // The curtain selected (its details in the panel), everything framed.
    await page.locator(`#instances li[data-instance="${cloth}"]`).click();
    await page.locator('input[name="wind-scope"][value="global"]').check();
    const frame = await step(30);
    await waitRendered(frame);
    await page.keyboard.press('a');
    await sleep(700);
    const { img } = await shot('readme');
    const total = img.width * img.height;
    assert.ok(clothPixels(img) > total * 0.02);
    assert.ok(huePixels(img, (await hook()).colours[ball]) > total * 0.002);
    const readme = path.join(VIEWER_DIR, 'screenshot.png');
    if (!fs.existsSync(readme) || process.env.VIEWER_UPDATE_SCREENSHOT === '1') {
      fs.copyFileSync(path.join(ARTIFACTS, 'viewer-readme-page.png'), readme);
    }
  });

  it('shows a sleeping instance as sleeping, still drawn, without frames', async () => {
    // A sleepier ball: at rest on the floor it falls asleep within seconds.
    await driver.request('set', { instance: ball, sleepThreshold: 0.1 });
    let asleep = false;
    for (let i = 0; i < 1200 && !asleep; i++) {
      asleep = (await driver.request('step', { dt: 1 / 60, instances: [ball] })).sleeping.includes(ball);
    }
    assert.ok(asleep, 'the ball falls asleep');
    await page.locator(`#instances li[data-instance="${ball}"]`).click();
    await waitFor('"sleeping" in the selection', async () => /state\s*sleeping/.test(await page.locator('#selection').textContent()));
    const flag = page.locator(`#instances li[data-instance="${ball}"] .flag`);
    assert.equal(await flag.textContent(), 'sleeping');
    assert.equal(await flag.isVisible(), true);
    const frames = (await hook()).frames[ball];
    for (let i = 0; i < 10; i++) await driver.request('step', { dt: 1 / 60, instances: [ball] });
    await sleep(300);
    const h = await hook();
    assert.equal(h.frames[ball], frames, 'a sleeping instance sends no frames');
    assert.equal(h.meshes[ball].kind, 'mesh');
    // Touching it wakes it: the flag goes.
    await driver.request('wind', { instance: ball, wind: [0, 0, 0] });
    await waitFor('awake again', async () => !(await flag.isVisible()), 5000);
  });

  it('follows the debug flag set by another client', async () => {
    const other = await ClothdConnection.connect('127.0.0.1', clothd.port);
    try {
      await other.request('debug', { enabled: true });
      await waitFor('debug on in the page', async () => (await hook()).debug === true);
      assert.equal(await page.locator('#debug-toggle').isChecked(), true);
      await sleep(300);
      await shot('debug');
      await other.request('debug', { enabled: false });
      await waitFor('debug off in the page', async () => (await hook()).debug === false);
    } finally {
      other.close();
    }
  });

  it('toggles debug from the page for every client', async () => {
    await page.locator('#debug-toggle').click();
    await waitFor('clothd debug on', async () => (await driver.request('status')).debug === true);
    await waitFor('page debug on', async () => (await hook()).debug === true);
    await page.keyboard.press('d');
    await waitFor('clothd debug off', async () => (await driver.request('status')).debug === false);
  });

  it('sets the global wind from the page', async () => {
    await page.locator('input[name="wind-scope"][value="global"]').check();
    await page.locator('#wind-x').fill('3.5');
    await page.locator('#wind-x').press('Enter');
    await page.locator('#wind-z').fill('-1.25');
    await page.locator('#wind-z').press('Enter');
    const st = await waitFor('globalWind [3.5, 0, -1.25]', async () => {
      const s = await driver.request('status');
      return s.globalWind[0] === 3.5 && s.globalWind[2] === -1.25 ? s : null;
    });
    assert.deepEqual(st.globalWind, [3.5, 0, -1.25]);
    await waitFor('page shows the wind', async () => (await hook()).globalWind[0] === 3.5);
    // Back to calm, with the button.
    await page.locator('#wind-zero').click();
    await waitFor('calm', async () => (await driver.request('status')).globalWind.every((v) => v === 0));
  });

  it('keeps only the newest frame per instance for a slow browser', async () => {
    // A raw WebSocket client that stops reading: the relay must skip frames
    // for it, not queue them, and still deliver the newest in the end. How
    // much a paused socket absorbs before the relay feels it depends on the
    // kernel's buffers (tens of MiB with receive autotuning), so the test
    // steps until the relay reports skipped frames rather than a fixed count.
    // The page steps aside meanwhile (drawing the big cloth in software GL
    // would only slow the machine down) and comes back afterwards.
    await page.goto('about:blank');
    const big = (await driver.request('create', { width: 100, height: 100, spacing: 0.02, origin: [3, 3, 0] })).instance;
    const ws = new WebSocket(viewer.url.replace('http', 'ws') + 'ws', { origin: viewer.origin });
    const relayState = async () => (await fetch(new URL('/api/state', viewer.url))).json();
    try {
      const frames = [];
      ws.on('message', (data, isBinary) => {
        if (isBinary && data.readUInt32LE(12) === big) frames.push(data.readUInt32LE(16));
      });
      await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
      await waitFor('the big instance relayed', () => frames.length > 0);
      ws._socket.pause();
      const maxSteps = 4000; // 4000 frames of 120 kB: far beyond any kernel buffer
      let steps = 0;
      let skipped = 0;
      while (skipped === 0 && steps < maxSteps) {
        for (let i = 0; i < 25; i++, steps++) await driver.request('step', { instances: [big] });
        const st = await relayState();
        skipped = Math.max(0, ...st.browsers.map((b) => b.skipped));
        assert.ok(st.browsers.every((b) => b.pending <= st.instances.length), 'at most one pending frame per instance');
      }
      assert.ok(skipped > 0, `the relay skipped no frame in ${steps} steps to a paused browser`);
      const last = (await driver.request('get', { instance: big })).frame;
      const before1 = frames.length;
      ws._socket.resume();
      await waitFor(`frame ${last} after resuming`, () => frames.at(-1) === last, 20000);
      const got = frames.length - before1;
      for (let i = 1; i < frames.length; i++) assert.ok(frames[i] > frames[i - 1], 'frames in order');
      assert.ok(got < steps, `a paused browser got ${got} of ${steps} frames: older ones must be dropped`);
    } finally {
      ws.close();
      await driver.request('destroy', { instance: big });
      await page.goto(viewer.url);
    }
    await waitFor('destroyed instance gone from the relay', async () => !(await relayState()).instances.some((m) => m.instance === big));
    await waitFor('the page back with the curtain and the ball only', async () => {
      const h = await hook();
      return h.connected && h.instances.length === 2 && h.frames[cloth] !== undefined && h.meshes[ball]?.kind === 'mesh';
    });
  });

  it('relays frames that decode to the instance state, quantized on request', async () => {
    const q = await startViewer(clothd.port, ['--quantize']);
    try {
      const ws = new WebSocket(q.url.replace('http', 'ws') + 'ws', { origin: q.origin });
      const frame = await new Promise((resolve, reject) => {
        ws.on('message', (data, isBinary) => { if (isBinary && data.readUInt32LE(12) === cloth) resolve(data); });
        ws.once('error', reject);
      });
      ws.close();
      const got = decodeFrame(frame);
      const state = await driver.request('get', { instance: cloth });
      assert.equal(got.frame, state.frame);
      const tol = got.quantized ? Math.max(...[0, 1, 2].map((a) => (got.bboxMax[a] - got.bboxMin[a]) / 65535 / 2)) + 1e-6 : 0;
      state.positions.forEach((p, i) => assert.ok(Math.abs(got.positions[i] - Math.fround(p)) <= tol, `position ${i}`));
    } finally {
      await stop(q.child);
    }
  });

  it('shows "disconnected" while clothd is away and reconnects', async () => {
    const port = clothd.port;
    driver.close();
    await stop(clothd.child);
    await waitFor('disconnected state', async () => (await page.locator('#conn').getAttribute('data-state')) === 'disconnected');
    assert.match(await page.locator('#conn-text').textContent(), /disconnected/);
    assert.equal((await hook()).connected, false);
    await shot('disconnected');
    clothd = await startClothd(port);
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    await waitFor('reconnected', async () => (await hook()).connected === true, 5000);
    // The old curtain is gone with the old server: the list follows.
    await waitFor('empty instance list', async () => (await hook()).instances.length === 0, 5000);
  });

  it('draws a cloth from its own grid when clothd has no topology', async () => {
    const old = await startOldClothd();
    const v = await startViewer(old.port);
    const p2 = await browser.newPage({ viewport: { width: 800, height: 600 } });
    p2.on('pageerror', (err) => pageErrors.push(`old clothd page: ${err.message}`));
    try {
      await p2.goto(v.url);
      const mesh = await waitFor('the cloth drawn', () => p2.evaluate(() => window.__clothd.meshes[1]));
      assert.deepEqual(mesh, { type: 'cloth', kind: 'mesh', source: 'grid', triangles: 2 * 3 * 2, particles: 12 });
      const h = await p2.evaluate(() => window.__clothd);
      assert.equal(h.instances[0].topology, 'unavailable');
      assert.equal(h.topology[1], undefined);
      assert.match(await p2.locator('#wind-unit').textContent(), /^m\/s(?!²)/); // no windModel: the default, aero
    } finally {
      await p2.close();
      await stop(v.child);
      await new Promise((r) => old.server.close(r));
    }
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
