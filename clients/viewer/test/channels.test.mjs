// The viewer with clothd's frame channels (issue 15), in headless Chromium:
// started with --channels velocities,normals it draws clothd's normals
// instead of computing them (the page's normals are get's, float for
// float), and its "Colour by speed" control paints each particle by its
// speed from the frames (the pinned edge at rest is blue, the swinging hem
// warmer). Screenshots go to $VIEWER_ARTIFACTS; screenshot-speed.png for
// the README (written when missing or with VIEWER_UPDATE_SCREENSHOT=1).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CHROMIUM, CLOTHD_BIN, VIEWER_DIR, launchChromium, sleep, startClothd, startViewer,
  waitFor, tearDown, openViewerPage
} from './harness.js';

const W = 20;
const H = 20;
const f32 = Math.fround;

// The instance's own orange (#e8743b), as viewer.test.mjs counts it.
function orangePixels(img) {
  let n = 0;
  for (let i = 0; i < img.rgba.length; i += 4) {
    const [r, g, b] = [img.rgba[i], img.rgba[i + 1], img.rgba[i + 2]];
    if (r > 90 && r - g > 40 && g - b > 15) n++;
  }
  return n;
}

// The speed ramp's cool end (blue to cyan): blue well above red.
function coolPixels(img) {
  let n = 0;
  for (let i = 0; i < img.rgba.length; i += 4) {
    const [r, b] = [img.rgba[i], img.rgba[i + 2]];
    if (b > 90 && b - r > 50) n++;
  }
  return n;
}

describe('viewer with velocity and normal channels', { timeout: 90000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let cloth;
  const pageErrors = [];
  const hook = () => page.evaluate(() => window.__clothd);

  async function step(n) {
    for (let i = 0; i < n; i++) {
      await driver.request('step', { dt: 1 / 60, instances: [cloth] });
      await sleep(8);
    }
    return driver.request('get', { instance: cloth, velocities: true, normals: true });
  }

  async function shot(name) {
    const file = path.join(ARTIFACTS, `viewer-${name}.png`);
    const png = await page.locator('#scene').screenshot({ path: file });
    await page.screenshot({ path: path.join(ARTIFACTS, `viewer-${name}-page.png`) });
    return decodePng(png);
  }

  before(async () => {
    assert.ok(fs.existsSync(CLOTHD_BIN), `${CLOTHD_BIN} missing`);
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} missing`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    // A curtain lying flat (down +z), held by its far edge: it swings down
    // towards the camera, its hem fastest.
    cloth = (await driver.request('create', {
      width: W, height: H, spacing: 0.1, origin: [-0.95, 2.4, -1.2], down: [0, 0, 1], sleepThreshold: 0,
    })).instance;
    await driver.request('pin', { instance: cloth, particles: [...Array(W).keys()] });
    viewer = await startViewer(clothd.port, ['--channels', 'velocities,normals']);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 800 });
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  it('draws clothd\'s normals, float for float', async () => {
    await waitFor('the relay\'s channels', async () => (await hook()).channels.length === 2);
    assert.deepEqual((await hook()).channels, ['velocities', 'normals']);
    const state = await step(18);
    await waitFor(`frame ${state.frame} on screen`, async () => (await hook()).rendered[cloth] === state.frame);
    const h = await hook();
    assert.equal(h.normals[cloth], 'frame');
    const drawn = await page.evaluate((id) => window.__clothd.normalsOf(id), cloth);
    assert.equal(drawn.length, 3 * W * H);
    state.normals.forEach((n, i) => assert.equal(drawn[i], f32(n), `normal component ${i}`));
    // Down x right: up (+y) while it lay flat, turning towards +z as it
    // swings down; the side never flips.
    for (let i = 0; i < drawn.length; i += 3) assert.ok(drawn[i + 1] + drawn[i + 2] > 0, `normal ${i / 3}`);
  });

  it('colours each particle by its speed from the frames', async () => {
    await page.keyboard.press('a');
    await sleep(600);
    const before = await shot('speed-off');
    assert.equal((await page.locator('#speed-toggle').isDisabled()), false);
    await page.locator('#speed-toggle').check();
    const state = await step(12);
    await waitFor(`frame ${state.frame} on screen`, async () => (await hook()).rendered[cloth] === state.frame);
    await sleep(150);
    const h = await hook();
    assert.equal(h.speedColours, true);
    // The page's speeds are those of get's velocities.
    const speeds = [];
    for (let i = 0; i < state.velocities.length; i += 3) {
      speeds.push(Math.hypot(f32(state.velocities[i]), f32(state.velocities[i + 1]), f32(state.velocities[i + 2])));
    }
    assert.equal(h.speeds[cloth][0], Math.min(...speeds));
    assert.equal(h.speeds[cloth][1], Math.max(...speeds));
    assert.ok(h.speeds[cloth][1] > 2, `the hem swings (${h.speeds[cloth][1]} m/s)`);
    // The pinned top row is at rest: the ramp's blue; the fastest particle
    // is warmer (more red, less blue).
    const colours = await page.evaluate((id) => window.__clothd.coloursOf(id), cloth);
    assert.deepEqual(colours.slice(0, 3).map((c) => Math.round(c * 100) / 100), [0.13, 0.28, 0.85]);
    const fastest = speeds.indexOf(Math.max(...speeds));
    assert.ok(colours[3 * fastest] > colours[0] && colours[3 * fastest + 2] < colours[2], 'the fastest particle is warmer');
    const after = await shot('speed');
    const total = after.width * after.height;
    assert.ok(orangePixels(before) > total * 0.02, 'the curtain in its own colour before');
    assert.ok(orangePixels(after) < orangePixels(before) / 4, 'its own colour gone');
    assert.ok(coolPixels(after) > coolPixels(before) + total * 0.01, 'blue at rest along the top');
    const readme = path.join(VIEWER_DIR, 'screenshot-speed.png');
    if (!fs.existsSync(readme) || process.env.VIEWER_UPDATE_SCREENSHOT === '1') {
      fs.copyFileSync(path.join(ARTIFACTS, 'viewer-speed-page.png'), readme);
    }
    // V toggles it back: the instance's own colour again.
    await page.locator('#scene').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('v');
    await waitFor('speed colours off', async () => (await hook()).speedColours === false);
    assert.deepEqual(pageErrors, []);
  });
});
