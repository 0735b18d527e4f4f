// A cloth draped on a sphere, in headless Chromium against the real clothd
// (issue 12): seen from above, no pixel inside the cloth's outline may show
// the sphere (the cloth rests exactly on its surface, and its flat
// triangles are chords that pass inside it: drawn at its true radius, the
// sphere shows through in star-shaped patches), and the sun's shadow falls
// on the ground beside it, gone when Display's Shadows is off.
// Screenshots: viewer-drape-*.png.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/drape.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CLOTHD_BIN, launchChromium, sleep, startClothd, startViewer, waitFor, requireTools,
  tearDown, openViewerPage
} from './harness.js';

const N = 25;
const S = 0.05;
const ABOVE = [[0, 3.2, 0.0001], [0, 0.8, 0]]; // camera position, target: straight down on the sphere

// The cloth's orange (#e8743b) under any light: red well above blue.
const isCloth = (img, i) => img.rgba[i] > 60 && img.rgba[i] - img.rgba[i + 2] > 30;
// The collider's grey-blue (#8fa3ba), lit or shaded: blue at least red.
const isCollider = (img, i) => img.rgba[i + 2] >= img.rgba[i] && img.rgba[i + 2] > 40;

// The pixels inside the cloth's outline: cloth-coloured in `mask` (the
// colliders hidden) together with every pixel within 2 of them, so that
// the outline's antialiased edge is left out.
function inside(mask) {
  const { width: w, height: h } = mask;
  const out = [];
  for (let y = 2; y < h - 2; y++) {
    for (let x = 2; x < w - 2; x++) {
      let all = true;
      for (let dy = -2; dy <= 2 && all; dy++) for (let dx = -2; dx <= 2 && all; dx++) all = isCloth(mask, 4 * ((y + dy) * w + x + dx));
      if (all) out.push(4 * (y * w + x));
    }
  }
  return out;
}

describe('a cloth draped on a sphere in headless Chromium', { timeout: 60000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let cloth;
  const pageErrors = [];

  const hook = () => page.evaluate(() => window.__clothd);
  const shot = async (name) => decodePng(await page.locator('#scene').screenshot({ path: path.join(ARTIFACTS, `viewer-drape-${name}.png`) }));

  before(async () => {
    requireTools();
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    // A 1.2 m square dropped flat onto a sphere of 0.3 m whose friction
    // keeps it there: 4 s later it rests on the top, the hem hanging.
    const half = ((N - 1) * S) / 2;
    cloth = (await driver.request('create', {
      width: N, height: N, spacing: S, origin: [-half, 1.2, -half], right: [1, 0, 0], down: [0, 0, 1],
    })).instance;
    await driver.request('addCollider', {
      instance: cloth, type: 'sphere', position: [0, 0.8, 0], radius: 0.3, friction: 0.6, staticFriction: 0.9,
    });
    for (let i = 0; i < 240; i++) await driver.request('step', { dt: 1 / 60, instances: [cloth] });
    const g = await driver.request('get', { instance: cloth });
    const top = g.positions[3 * ((N * N) >> 1) + 1];
    assert.ok(Math.abs(top - 1.1) < 0.01, `the middle of the cloth rests on the sphere's top (y ${top})`);
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1000, height: 700 });
    await waitFor('the draped cloth on screen', async () => (await hook()).rendered[cloth] === g.frame);
    await page.locator('#plot-toggle').uncheck(); // nothing over the view
    await page.evaluate(([p, t]) => window.__clothd.view(p, t), ABOVE);
    await sleep(300);
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  it('shows none of the sphere through the cloth resting on it', async () => {
    await page.evaluate(() => window.__clothd.showColliders(false));
    await sleep(200);
    const cells = inside(await shot('mask'));
    await page.evaluate(() => window.__clothd.showColliders(true));
    // The same view drawn the way that let the sphere through: at its true radius.
    await page.evaluate(() => window.__clothd.setColliderInset(false));
    await sleep(300);
    const bare = await shot('true-radius');
    const before0 = cells.filter((i) => isCollider(bare, i)).length;
    await page.evaluate(() => window.__clothd.setColliderInset(true));
    await sleep(300);
    const fixed = await shot('inset');
    const after0 = cells.filter((i) => isCollider(fixed, i)).length;
    console.log(`# drape: ${cells.length} pixels inside the cloth; the sphere shows in ${before0} at its true radius, ${after0} drawn inset`);
    assert.ok(cells.length > 20000, `the cloth covers the view's middle: ${cells.length} pixels`);
    assert.ok(before0 > 1000, `at its true radius the sphere shows through: ${before0} pixels (the test sees it)`);
    assert.equal(after0, 0, 'inset, none of the sphere shows inside the cloth');
  });

  it('casts the shadow of the draped cloth on the ground, and not with Shadows off', async () => {
    // The sun is up to the -x, +z side: the shadow falls to +x, -z, on the
    // ground beside the cloth. Ground pixels: the warm grey (red >= green
    // >= blue), lit or in shadow, outside the cloth and the sphere.
    // Seen from above, world +x is to the right and -z up the screen: the
    // shadow's middle lies right of and above the cloth's.
    const ground = (img) => {
      let lit = 0;
      let dark = 0;
      const sum = { dark: [0, 0], cloth: [0, 0], n: 0 };
      for (let i = 0; i < img.rgba.length; i += 4) {
        const [r, g, b] = [img.rgba[i], img.rgba[i + 1], img.rgba[i + 2]];
        const x = (i / 4) % img.width;
        const y = Math.floor(i / 4 / img.width);
        if (isCloth(img, i)) {
          sum.cloth[0] += x;
          sum.cloth[1] += y;
          sum.n++;
          continue;
        }
        if (!(r >= g && g >= b && r - b < 20)) continue;
        if (r > 62) {
          lit++; // lit: about (73, 69, 63)
        } else if (r > 30 && r < 56) { // in shadow: about (48, 46, 45); the background (27, 30, 36) is blue
          dark++;
          sum.dark[0] += x;
          sum.dark[1] += y;
        }
      }
      const shadowMiddle = dark > 0 ? sum.dark.map((v) => v / dark) : null;
      return { lit, dark, shadowMiddle, clothMiddle: sum.cloth.map((v) => v / sum.n) };
    };
    assert.equal(await page.locator('#shadow-toggle').isChecked(), true, 'shadows are on by default');
    const on = ground(await shot('shadow'));
    await page.locator('#shadow-toggle').uncheck();
    await waitFor('shadows off', async () => (await hook()).shadows === false);
    await sleep(300);
    const off = ground(await shot('no-shadow'));
    await page.locator('#shadow-toggle').check();
    console.log(`# drape: ground pixels lit ${on.lit}, in shadow ${on.dark}; with Shadows off ${off.lit} and ${off.dark}`);
    assert.ok(on.lit > 50000, `the ground is drawn: ${on.lit} lit pixels`);
    assert.ok(on.dark > 5000, `the cloth's shadow lies on the ground: ${on.dark} pixels`);
    assert.ok(on.shadowMiddle[0] > on.clothMiddle[0] + 20 && on.shadowMiddle[1] < on.clothMiddle[1] - 20,
      `the shadow (middle ${on.shadowMiddle.map(Math.round)}) lies away from the sun, right of and above the cloth (${on.clothMiddle.map(Math.round)})`);
    assert.ok(off.lit + off.dark < 500, `no ground and no shadow with Shadows off: ${off.lit + off.dark}`);
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
