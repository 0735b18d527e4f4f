// The skeleton's colliders in the viewer (issue 14): a tapered capsule and a
// box turned about two axes, listed by clothd's `get`, drawn in the page
// without errors, and gone from the canvas once removed.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/shapes.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CLOTHD_BIN, launchChromium, sleep, startClothd, startViewer, waitFor, requireTools,
  tearDown, openViewerPage
} from './harness.js';

// The colliders' grey-blue (#8fa3ba) under the scene's lights: blue above
// red above nothing much, unsaturated but not grey.
function colliderPixels(img) {
  let n = 0;
  for (let i = 0; i < img.rgba.length; i += 4) {
    const r = img.rgba[i];
    const g = img.rgba[i + 1];
    const b = img.rgba[i + 2];
    if (b > 80 && b - r > 15 && b - r < 70 && g > r && b >= g) n++;
  }
  return n;
}

describe('tapered capsules and boxes in the viewer', { timeout: 60000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let cloth;
  const ids = [];
  const pageErrors = [];

  const hook = () => page.evaluate(() => window.__clothd);
  async function step(n) {
    for (let i = 0; i < n; i++) await driver.request('step', { dt: 1 / 60, instances: [cloth] });
    return (await driver.request('get', { instance: cloth })).frame;
  }
  async function shot(name) {
    const png = await page.locator('#scene').screenshot({ path: path.join(ARTIFACTS, `viewer-${name}.png`) });
    return decodePng(png);
  }

  before(async () => {
    requireTools();
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    // A small pinned scarf above an arm and a torso.
    cloth = (await driver.request('create', {
      width: 6, height: 6, spacing: 0.08, origin: [-0.2, 2.2, -0.6], right: [1, 0, 0], down: [0, -1, 0],
    })).instance;
    await driver.request('pin', { instance: cloth, particles: [0, 5] });
    ids.push((await driver.request('addCollider', {
      instance: cloth, type: 'taperedCapsule', position: [-0.5, 1.2, 0], normal: [1, -1, 0], radius: 0.25, radius2: 0.1, height: 1.4,
    })).collider);
    ids.push((await driver.request('addCollider', {
      instance: cloth, type: 'box', position: [0.6, 1.2, 0], halfExtents: [0.3, 0.45, 0.2], rotation: [0.1830127, 0.1830127, 0.6830127, 0.6830127],
    })).collider);
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1000, height: 700 });
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  it('draws both shapes, and nothing of them once removed', async () => {
    await waitFor('the colliders in the page', async () => {
      const meta = (await hook()).instances.find((m) => m.instance === cloth);
      return meta?.colliders?.length === 2;
    });
    const meta = (await hook()).instances.find((m) => m.instance === cloth);
    assert.deepEqual(meta.colliders.map((c) => c.type), ['taperedCapsule', 'box']);
    assert.equal(Math.fround(meta.colliders[0].radius2), Math.fround(0.1));
    assert.deepEqual(meta.colliders[1].halfExtents.map(Math.fround), [0.3, 0.45, 0.2].map(Math.fround));
    let frame = await step(5);
    await waitFor(`frame ${frame} on screen`, async () => (await hook()).rendered[cloth] >= frame);
    await page.keyboard.press('a');
    await sleep(800);
    const drawn = colliderPixels(await shot('shapes'));
    for (const collider of ids) await driver.request('removeCollider', { instance: cloth, collider });
    frame = await step(5);
    await waitFor('the colliders gone from the page', async () => {
      const m = (await hook()).instances.find((x) => x.instance === cloth);
      return m?.colliders?.length === 0 && (await hook()).rendered[cloth] >= frame;
    });
    await sleep(300);
    const gone = colliderPixels(await shot('shapes-removed'));
    assert.ok(drawn > 3000, `collider-coloured pixels with both shapes: ${drawn}`);
    assert.ok(gone < drawn / 10, `collider-coloured pixels after removing them: ${gone} (was ${drawn})`);
    assert.deepEqual(pageErrors, []);
  });
});
