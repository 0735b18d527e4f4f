// The timeline (issue 13, part 4), in headless Chromium against the real
// clothd with --data-dir: a curtain in gusting wind is recorded over 120
// frames (the test keeps every frame clothd sent), opened in the viewer,
// scrubbed, stepped back and forward, played and paused; at each stop the
// page shows the frame number and draws the positions the curtain had at
// that frame, bit for bit. A recording in progress opens too, and grows.
// Screenshots: timeline-scrubbed.png, timeline-paused.png.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/timeline.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import { decodeFrame } from '../public/frame.js';
import {
  ARTIFACTS, CLOTHD_BIN, CHROMIUM, launchChromium, openSocket, sleep, startClothd, startViewer,
  stop, waitFor, tearDown, openViewerPage
} from './harness.js';

const W = 20;
const H = 14;
const FRAMES = 120;

describe('the timeline in headless Chromium', { timeout: 120000 }, () => {
  let dir;
  let clothd;
  let viewer;
  let driver;
  let browser;
  let page;
  let curtain;
  let frame0;            // the curtain's own frame number when the recording started
  const recorded = new Map(); // the curtain's frame number -> its positions (Float32Array)
  const pageErrors = [];
  const hook = () => page.evaluate(() => window.__clothd);
  const drawn = (id) => page.evaluate((i) => window.__clothd.positions(i), id);

  before(async () => {
    assert.ok(fs.existsSync(CLOTHD_BIN), `${CLOTHD_BIN} missing`);
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} missing`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-timeline-'));
    clothd = await startClothd(0, ['--data-dir', dir]);
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    driver.on('frame', (buf) => {
      const f = decodeFrame(buf);
      if (f.instance === curtain) recorded.set(f.frame, f.positions);
    });
    // A curtain hung from its top row, in a wind that gusts every 30 frames.
    curtain = (await driver.request('create', {
      width: W, height: H, spacing: 0.06, origin: [-0.6, 1.9, 0], sleepThreshold: 0,
    })).instance;
    await driver.request('pin', { instance: curtain, particles: [...Array(W).keys()] });
    await driver.request('subscribe', { instance: curtain });
    frame0 = (await driver.request('get', { instance: curtain })).frame;
    await driver.request('record', { name: 'curtain', instances: [curtain] });
    for (let f = 0; f < FRAMES; f++) {
      if (f % 30 === 0) await driver.request('wind', { instance: curtain, wind: [1 + f / 20, 0, 3 - f / 40] });
      if (f === 90) await driver.request('unpin', { instance: curtain, particles: [0] });
      await driver.request('step', { dt: 1 / 60, instances: [curtain] });
    }
    const stopped = await driver.request('record', { stop: true });
    assert.equal(stopped.frames, FRAMES);
    await waitFor('every recorded frame', () => recorded.has(frame0 + FRAMES));
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 800 });
  });

  after(async () => {
    await tearDown({ browser, connections: [driver], viewers: [viewer], clothd });
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Waits until the timeline stands at journal frame k, drawn: the replayed
  // curtain's view shows its frame for k. Returns [hook, replayed id].
  async function shownAt(k) {
    return waitFor(`frame ${k} drawn`, async () => {
      const h = await hook();
      const t = h.timeline;
      if (!t.open || t.pending || t.frame !== k || t.instances.length !== 1) return null;
      const id = t.instances[0];
      return h.rendered[id] === frame0 + k ? [h, id] : null;
    }, 20000);
  }

  // The drawn positions equal the recorded ones at journal frame k, bit for bit.
  async function assertPositionsAt(k) {
    const [h, id] = await shownAt(k);
    assert.equal(h.timeline.instanceFrames[id], frame0 + k);
    const want = recorded.get(frame0 + k);
    assert.ok(want, `the test kept frame ${frame0 + k}`);
    const got = Float32Array.from(await drawn(id));
    assert.equal(got.length, want.length);
    assert.ok(got.every((v, i) => Object.is(v, want[i])), `positions at frame ${k} equal the recorded ones`);
    assert.match(await page.locator('#tl-readout').textContent(), new RegExp(`^frame ${k} / ${FRAMES} · t \\d+\\.\\d{3} s$`));
    return [h, id];
  }

  it('lists the journals and opens one at frame 0', async () => {
    await waitFor('the journal list', async () => (await hook()).timeline.journals?.includes('curtain'));
    await page.selectOption('#tl-journals', 'curtain');
    await page.click('#tl-open');
    const [h, id] = await assertPositionsAt(0);
    assert.deepEqual(h.timeline.recorded, [curtain]);
    assert.equal(h.timeline.frames, FRAMES);
    assert.equal(h.timeline.complete, true);
    assert.notEqual(id, curtain);
    // The replayed curtain is disabled: a step of every instance leaves it at its frame.
    await driver.request('step', { dt: 1 / 60 });
    assert.equal((await driver.request('get', { instance: id })).frame, frame0);
  });

  it('scrubs to frame 60 with the requests coalesced', async () => {
    const before = (await hook()).timeline.replays;
    // Every position the slider passes, as a drag sends them, then the release.
    await page.$eval('#tl-scrub', (el) => {
      for (let v = 2; v <= 60; v += 2) {
        el.value = String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
      }
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    const [h, id] = await assertPositionsAt(60);
    assert.equal(h.colours[id], h.colours[curtain], 'drawn in the recorded curtain\'s colour');
    const replays = h.timeline.replays - before;
    console.log(`# 30 slider positions: ${replays} replay(s)`);
    assert.ok(replays >= 1 && replays < 30, `30 slider positions took ${replays} replays (only the newest matters)`);
    await sleep(300);
    await page.screenshot({ path: path.join(ARTIFACTS, 'timeline-scrubbed.png') });
  });

  it('steps one frame back and forward (buttons and arrow keys)', async () => {
    await page.click('#tl-back');
    await assertPositionsAt(59);
    await page.click('#tl-fwd');
    await page.click('#tl-fwd');
    await assertPositionsAt(61);
    await page.locator('#scene').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('ArrowLeft');
    await assertPositionsAt(60);
    // Only the newest replay's instances are left in clothd, besides the curtain.
    const ids = (await driver.request('status')).instances.map((s) => s.instance).sort();
    assert.deepEqual(ids, [curtain, (await hook()).timeline.instances[0]].sort());
  });

  it('plays and pauses', async () => {
    const from = (await hook()).timeline.frame;
    const t0 = Date.now();
    await page.click('#tl-play');
    await waitFor('playing past frame 70', async () => {
      const t = (await hook()).timeline;
      return t.playing && t.frame > 70;
    });
    const rate = (((await hook()).timeline.frame - from) * 1000) / (Date.now() - t0);
    console.log(`# played ${rate.toFixed(1)} frames/s (at most 30)`);
    await page.click('#tl-play');
    await waitFor('paused', async () => !(await hook()).timeline.playing && !(await hook()).timeline.pending);
    const k = (await hook()).timeline.frame;
    await sleep(300);
    assert.equal((await hook()).timeline.frame, k, 'paused: the frame stays');
    await assertPositionsAt(k);
    await page.screenshot({ path: path.join(ARTIFACTS, 'timeline-paused.png') });
    // Played from near the end, it stops at the last frame.
    await page.$eval('#tl-scrub', (el) => {
      el.value = '117';
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await assertPositionsAt(117);
    await page.keyboard.press(' ');
    await waitFor('stopped at the end', async () => {
      const t = (await hook()).timeline;
      return !t.playing && t.frame === FRAMES;
    });
    await assertPositionsAt(FRAMES);
  });

  it('opens the recording in progress and follows it as it grows', async () => {
    await page.click('#tl-close');
    await waitFor('closed, its instances destroyed', async () => {
      const ids = (await driver.request('status')).instances.map((s) => s.instance);
      return !(await hook()).timeline.open && ids.length === 1 && ids[0] === curtain;
    });
    const start = (await driver.request('get', { instance: curtain })).frame;
    await driver.request('record', { name: 'live', instances: [curtain] });
    for (let f = 0; f < 10; f++) await driver.request('step', { dt: 1 / 60, instances: [curtain] });
    await page.click('#tl-list');
    await waitFor('the recording listed', async () => (await hook()).timeline.recording?.name === 'live');
    assert.match(await page.locator('#tl-journals option[value="live"]').textContent(), /recording, 10 frames/);
    await page.selectOption('#tl-journals', 'live');
    await page.click('#tl-open');
    await waitFor('open at frame 0 of 10', async () => {
      const t = (await hook()).timeline;
      return t.open && t.name === 'live' && t.live && t.frames === 10 && t.frame === 0 && !t.pending;
    });
    for (let f = 0; f < 5; f++) await driver.request('step', { dt: 1 / 60, instances: [curtain] });
    await waitFor('its length grows to 15', async () => (await hook()).timeline.frames === 15, 5000);
    await page.$eval('#tl-scrub', (el) => {
      el.value = '15';
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    const [h, id] = await waitFor('frame 15 drawn', async () => {
      const hh = await hook();
      const t = hh.timeline;
      return t.frame === 15 && !t.pending && hh.rendered[t.instances[0]] === start + 15 ? [hh, t.instances[0]] : null;
    });
    assert.match(h.timeline.readout, /^frame 15 \/ 15 \(recording\)/);
    const want = recorded.get(start + 15);
    const got = Float32Array.from(await drawn(id));
    assert.ok(got.every((v, i) => Object.is(v, want[i])), 'the live journal replays the recorded bits');
    await driver.request('record', { stop: true });
    await page.click('#tl-close');
  });

  it('lists but does not open a journal through a read-only relay', async () => {
    const ro = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-timeline-ro-'));
    fs.copyFileSync(path.join(dir, 'curtain.cdj'), path.join(ro, 'curtain.cdj'));
    fs.writeFileSync(path.join(ro, 'full.token'), `full-${'f'.repeat(20)}\n`, { mode: 0o600 });
    fs.writeFileSync(path.join(ro, 'ro.token'), `readonly-${'r'.repeat(20)}\n`, { mode: 0o600 });
    const server = await startClothd(0, ['--data-dir', ro, '--token-file', path.join(ro, 'full.token'),
      '--readonly-token-file', path.join(ro, 'ro.token')]);
    const relay = await startViewer(server.port, ['--token-file', path.join(ro, 'ro.token')]);
    try {
      const s = await waitFor('the relay connected', async () => {
        const o = await openSocket(relay.port, { origin: relay.origin });
        if (o.hello.connected) return o;
        o.ws.close();
        return null;
      });
      const got = [];
      s.ws.on('message', (data, isBinary) => { if (!isBinary) got.push(JSON.parse(data.toString('utf8'))); });
      s.ws.send(JSON.stringify({ type: 'timeline', action: 'list' }));
      s.ws.send(JSON.stringify({ type: 'timeline', action: 'open', name: 'curtain' }));
      await waitFor('the list and the refusal', () => got.some((m) => m.type === 'journals') && got.some((m) => m.type === 'error'));
      s.ws.close();
      const list = got.find((m) => m.type === 'journals');
      assert.deepEqual([list.available, list.journals], [true, ['curtain']]);
      assert.match(got.find((m) => m.type === 'error').message, /^read-only: .*the timeline replays into new instances/);
      const check = await ClothdConnection.connect('127.0.0.1', server.port);
      await check.request('auth', { token: `full-${'f'.repeat(20)}` });
      assert.deepEqual((await check.request('status')).instances, [], 'nothing replayed');
      check.close();
    } finally {
      await stop(relay.child);
      await stop(server.child);
      fs.rmSync(ro, { recursive: true, force: true });
    }
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
