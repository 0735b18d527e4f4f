// The instance list grouped by scene (issue 12), in headless Chromium
// against the real clothd: two clients' instances in four scenes, one of
// them held by a connection (ephemeral) with nothing in it yet, and one
// instance tied to its connection on its own. The list shows one group per
// scene, "default" first and then the others by name, each with exactly its
// instances; the held scenes and the ephemeral instances are marked; a group
// folds and stays folded over a reload; clicking a folded scene's instance in
// the view unfolds it; when the holding connection closes its scenes and
// instances leave the list. Screenshots: viewer-scenes-*.png.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/scenes.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import {
  ARTIFACTS, CLOTHD_BIN, launchChromium, startClothd, startViewer, waitFor, requireTools,
  tearDown, openViewerPage
} from './harness.js';

const BALL = [1.5, 1, 0]; // the ball's centre, in scene "npc-capes"

describe('the instance list grouped by scene in headless Chromium', { timeout: 60000 }, () => {
  let clothd;
  let viewer;
  let artist;  // a technical artist's script: plain instances in "default" and "artist"
  let game;    // a game server: holds "npc-capes" and "match-42", one ephemeral instance in "default"
  let browser;
  let page;
  const ids = {};
  const pageErrors = [];

  const hook = () => page.evaluate(() => window.__clothd);
  const shot = (name) => page.screenshot({ path: path.join(ARTIFACTS, `viewer-scenes-${name}.png`) });
  // What the list shows, read from the page: each group's title, its
  // "ephemeral" mark, whether it is folded, and its rows' ids (visible or
  // not), hollow swatches and visibility.
  const list = () => page.evaluate(() => [...document.querySelectorAll('#instances > li.scene')].map((g) => {
    const head = g.querySelector('.scene-head');
    return {
      scene: head.querySelector('.scene-name').textContent,
      count: Number(head.querySelector('.count').textContent),
      held: !head.querySelector('.scene-flag').hidden && head.querySelector('.scene-flag').getBoundingClientRect().width > 0,
      expanded: head.getAttribute('aria-expanded') === 'true',
      rows: [...g.querySelectorAll('li[data-instance]')].map((li) => ({
        id: Number(li.dataset.instance),
        hollow: getComputedStyle(li.querySelector('.swatch')).backgroundColor === 'rgba(0, 0, 0, 0)',
        visible: li.getBoundingClientRect().height > 0,
      })),
    };
  }));
  const create = (conn, fields) => conn.request('create', fields).then((r) => r.instance);

  before(async () => {
    requireTools();
    clothd = await startClothd();
    artist = await ClothdConnection.connect('127.0.0.1', clothd.port);
    game = await ClothdConnection.connect('127.0.0.1', clothd.port);
    const sheet = { width: 6, height: 6, spacing: 0.1 };
    ids.plain = await create(artist, { ...sheet, origin: [-2.5, 1.5, 0] });
    ids.study = await create(artist, { ...sheet, scene: 'artist', origin: [-1.5, 1.5, 0] });
    await game.request('scene', { scene: 'npc-capes', ephemeral: true });
    await game.request('scene', { scene: 'match-42', ephemeral: true }); // held, nothing in it yet
    ids.tied = await create(game, { ...sheet, ephemeral: true, origin: [-0.5, 1.5, 0] });
    ids.ball = await create(game, { type: 'softbody', scene: 'npc-capes', shape: 'ball', radius: 0.3, resolution: 4, center: BALL });
    ids.cape = await create(game, { ...sheet, scene: 'npc-capes', origin: [2.5, 1.5, 0] });
    viewer = await startViewer(clothd.port);
    browser = await launchChromium();
    page = await openViewerPage(browser, viewer.url, pageErrors, { width: 1280, height: 720 });
    await waitFor('every instance drawn', async () => {
      const h = await hook();
      return Object.values(ids).every((id) => h.rendered[id] >= 0) && (await list()).length === 4;
    });
  });

  after(() => tearDown({ browser, connections: [artist, game], viewers: [viewer], clothd }));

  it('lists each scene with exactly its instances, "default" first, the others by name', async () => {
    const groups = await list();
    assert.deepEqual(groups.map((g) => g.scene), ['default', 'artist', 'match-42', 'npc-capes']);
    const rows = Object.fromEntries(groups.map((g) => [g.scene, g.rows.map((r) => r.id)]));
    assert.deepEqual(rows, {
      default: [ids.plain, ids.tied].sort((a, b) => a - b),
      artist: [ids.study],
      'match-42': [],
      'npc-capes': [ids.ball, ids.cape].sort((a, b) => a - b),
    });
    for (const g of groups) assert.equal(g.count, g.rows.length, `${g.scene}: the count says its instances`);
    // The same as clothd's own scenes.
    const st = await artist.request('status');
    for (const s of st.instances) assert.ok(rows[s.scene].includes(s.instance), `#${s.instance} under "${s.scene}"`);
    await shot('groups');
  });

  it('marks the held scenes and every ephemeral instance, and nothing else', async () => {
    const groups = await list();
    const held = Object.fromEntries(groups.map((g) => [g.scene, g.held]));
    assert.deepEqual(held, { default: false, artist: false, 'match-42': true, 'npc-capes': true });
    const hollow = groups.flatMap((g) => g.rows).filter((r) => r.hollow).map((r) => r.id).sort((a, b) => a - b);
    assert.deepEqual(hollow, [ids.tied, ids.ball, ids.cape].sort((a, b) => a - b), 'hollow swatches: the ephemeral instances');
    // The selection says the scene and the tie.
    await page.locator(`#instances li[data-instance="${ids.tied}"]`).click();
    await waitFor('the scene row', async () => (await page.locator('#selection dd').allTextContents()).includes('default · ephemeral'));
    await page.locator(`#instances li[data-instance="${ids.study}"]`).click();
    await waitFor('the scene row', async () => (await page.locator('#selection dd').allTextContents()).includes('artist'));
    await page.keyboard.press('Escape');
  });

  it('folds a scene on a click, keeps it folded over a reload, and unfolds it for a selection in the view', async () => {
    await page.locator('#instances li.scene[data-scene="npc-capes"] .scene-head').click();
    let g = (await list()).find((x) => x.scene === 'npc-capes');
    assert.equal(g.expanded, false);
    assert.ok(g.rows.every((r) => !r.visible), 'its rows are hidden');
    assert.ok((await list()).filter((x) => x.scene !== 'npc-capes').every((x) => x.expanded && x.rows.every((r) => r.visible)),
      'the other scenes stay open');
    await shot('folded');
    await page.reload();
    await waitFor('the list again', async () => (await list()).length === 4 && (await hook()).rendered[ids.ball] >= 0);
    g = (await list()).find((x) => x.scene === 'npc-capes');
    assert.equal(g.expanded, false, 'still folded after a reload');
    assert.deepEqual((await hook()).scenes.find((x) => x.scene === 'npc-capes').collapsed, true);
    // A click on the ball in the view (the camera straight at it) selects it
    // and unfolds its scene, so that the selection shows in the list.
    await page.evaluate((c) => window.__clothd.view([c[0], c[1], c[2] + 2.5], c), BALL);
    await page.waitForTimeout(300);
    const box = await page.locator('#scene').boundingBox();
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await waitFor('the ball selected', async () => (await hook()).selected === ids.ball);
    g = (await list()).find((x) => x.scene === 'npc-capes');
    assert.equal(g.expanded, true);
    assert.ok(g.rows.every((r) => r.visible));
    assert.equal(await page.locator(`#instances li[data-instance="${ids.ball}"]`).getAttribute('aria-selected'), 'true');
    await page.keyboard.press('Escape');
  });

  it('drops the held scenes and the tied instance when their connection closes', async () => {
    game.close();
    await waitFor('the game server\'s scenes gone', async () => (await list()).length === 2, 5000);
    const rows = Object.fromEntries((await list()).map((g) => [g.scene, g.rows.map((r) => r.id)]));
    assert.deepEqual(rows, { default: [ids.plain], artist: [ids.study] });
    await shot('after-close');
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
