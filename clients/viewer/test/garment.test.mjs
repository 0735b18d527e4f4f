// Garments in the viewer (issue 14), in headless Chromium against the real
// clothd: a cape cut as a mesh, skinned to a walking body of capsules, is
// drawn from its own triangles and shows on the canvas (screenshot
// viewer-walking-cape.png); a sheet that tears is drawn anew from its new
// topology.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/garment.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodePng } from './png.js';
import {
  ARTIFACTS, CLOTHD_BIN, CHROMIUM, launchChromium, sleep, startClothd, startViewer, waitFor,
  tearDown, openViewerPage
} from './harness.js';

const W = 24;
const H = 20;
const S = 0.035;

// The cape: a W x H sheet with a neck cut-out, hanging behind the torso,
// round the back; its reach grows from 0 at the shoulders to 0.5 m.
function capeMesh() {
  const tris = [];
  const used = new Set();
  for (let y = 0; y < H - 1; y++) {
    for (let x = 0; x < W - 1; x++) {
      if (x >= 10 && x <= 12 && y < 3) continue;
      const tl = y * W + x;
      const q = [tl, tl + W, tl + 1, tl + 1, tl + W, tl + W + 1];
      tris.push(...q);
      for (const i of q) used.add(i);
    }
  }
  const order = [...used].sort((a, b) => a - b);
  const remap = new Map(order.map((old, i) => [old, i]));
  const rest = [];
  const reach = [];
  for (const i of order) {
    const x = i % W;
    const y = Math.floor(i / W);
    const u = (x - (W - 1) / 2) * S;
    rest.push([u, 0.25 - y * S, -0.17 - 0.25 * u * u]);
    reach.push(y < 2 ? 0 : (0.5 * (y - 1)) / (H - 2));
  }
  return { rest, triangles: tris.map((i) => remap.get(i)), reach };
}

function pose(t) {
  const heading = 0.4 * Math.sin(0.5 * t);
  return { torso: [1.4 * t * Math.sin(heading), 1.1, 1.4 * t * Math.cos(heading)], heading };
}

const rotY = (a, v) => [Math.cos(a) * v[0] + Math.sin(a) * v[2], v[1], -Math.sin(a) * v[0] + Math.cos(a) * v[2]];

// Pixels of the first instance's orange (#e8743b) under any light.
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

describe('garments in the viewer, in headless Chromium', { timeout: 90000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let cape;
  let mesh;
  const pageErrors = [];
  const hook = () => page.evaluate(() => window.__clothd);

  before(async () => {
    assert.ok(fs.existsSync(CLOTHD_BIN), `${CLOTHD_BIN} missing`);
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} missing`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    mesh = capeMesh();
    const { torso } = pose(0);
    const start = mesh.rest.map((r) => [r[0] + torso[0], r[1] + torso[1], r[2] + torso[2]]);
    cape = (await driver.request('create', {
      type: 'cloth', vertices: start, triangles: mesh.triangles, mass: 0.8, thickness: 0.01,
      maxDistance: mesh.reach, backstopDistance: 0.01, backstopRadius: 0.3,
    })).instance;
    await driver.request('transform', { instance: cape, name: 'torso', position: torso });
    await driver.request('transform', { instance: cape, name: 'hips', position: [torso[0], torso[1] - 0.35, torso[2]] });
    const body = [
      ['torso', [0, 0.05, 0], [0, 1, 0], 0.15, 0.6], ['hips', [0, 0, 0], [1, 0, 0], 0.14, 0.42],
      ['torso', [-0.22, 0.05, 0], [0, 1, 0], 0.05, 0.35], ['torso', [0.22, 0.05, 0], [0, 1, 0], 0.05, 0.35],
      ['hips', [-0.1, -0.22, 0], [0, 1, 0], 0.08, 0.45], ['hips', [0.1, -0.22, 0], [0, 1, 0], 0.08, 0.45],
      ['hips', [-0.1, -0.62, 0], [0, 1, 0], 0.06, 0.42], ['hips', [0.1, -0.62, 0], [0, 1, 0], 0.06, 0.42],
    ];
    for (const [bone, position, normal, radius, height] of body) {
      await driver.request('addCollider', { instance: cape, type: 'capsule', position, normal, radius, height, attachment: bone });
    }
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 800 });
  });

  after(() => tearDown({ browser, connections: [driver], viewers: [viewer], clothd }));

  // One frame of walking: the body's transforms, the cape's skin, a step.
  async function walk(f) {
    const t = f / 60;
    const { torso, heading } = pose(t);
    const q = [0, Math.sin(heading / 2), 0, Math.cos(heading / 2)];
    await driver.request('transform', { instance: cape, name: 'torso', position: torso, rotation: q });
    await driver.request('transform', { instance: cape, name: 'hips', position: [torso[0], torso[1] - 0.35, torso[2]], rotation: q });
    const positions = mesh.rest.map((r) => rotY(heading, r).map((c, k) => c + torso[k]));
    const back = rotY(heading, [0, 0, -1]);
    await driver.request('skin', { instance: cape, positions, normals: positions.map(() => back) });
    return driver.request('step', { dt: 1 / 60, instances: [cape] });
  }

  it('draws the walking cape from its own triangles', async () => {
    for (let f = 0; f < 90; f++) await walk(f);
    const frame = (await driver.request('get', { instance: cape })).frame;
    await waitFor('the cape on screen', async () => (await hook()).rendered[cape] >= frame);
    const h = await hook();
    const topo = await driver.request('topology', { instance: cape });
    assert.deepEqual(h.meshes[cape], {
      type: 'cloth', kind: 'mesh', source: 'topology', triangles: topo.triangles.length / 3, particles: topo.particles,
    });
    assert.equal(topo.skinned, true);
    await page.keyboard.press('a'); // everything in view
    await sleep(700);
    const png = await page.locator('#scene').screenshot({ path: path.join(ARTIFACTS, 'viewer-walking-cape.png') });
    const img = decodePng(png);
    assert.ok(clothPixels(img) > img.width * img.height * 0.01, 'the cape shows on the canvas');
    assert.match(await page.locator(`#instances li[data-instance="${cape}"] .size`).textContent(), /^mesh \d+$/);
  });

  it('draws a torn sheet anew from its new topology', async () => {
    const w = 16;
    const h = 8;
    const sheet = (await driver.request('create', {
      width: w, height: h, spacing: 0.05, origin: [2, 1.5, 0], gravity: [0, 0, 0], tearStrain: 0.3, sleepThreshold: 0,
    })).instance;
    await driver.request('pin', { instance: sheet, particles: [...Array(h).keys()].map((y) => y * w) });
    let torn = false;
    for (let f = 1; f <= 150 && !torn; f++) {
      const right = [...Array(h).keys()].map((y) => y * w + w - 1);
      await driver.request('pin', {
        instance: sheet, particles: right, positions: right.map((_, y) => [2 + (w - 1) * 0.05 + f / 60, 1.5 - y * 0.05, 0]),
      });
      const reply = await driver.request('step', { dt: 1 / 60, instances: [sheet] });
      torn = (reply.torn ?? []).includes(sheet);
    }
    assert.ok(torn, 'the sheet tore');
    // Under small steps a pulled sheet tears over several steps: step on
    // until one adds no tear, so the page has one last topology to draw.
    for (let f = 0; f < 60 && torn; f++) {
      const reply = await driver.request('step', { dt: 1 / 60, instances: [sheet] });
      torn = (reply.torn ?? []).includes(sheet);
    }
    assert.ok(!torn, 'the tearing stopped');
    const topo = await driver.request('topology', { instance: sheet });
    assert.ok(topo.particles > w * h);
    await waitFor('the page draws the torn topology', async () => {
      const m = (await hook()).meshes[sheet];
      return m && m.source === 'topology' && m.particles === topo.particles && m.triangles === topo.triangles.length / 3;
    });
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
