// The viewer against a clothd that wants a token (issue 9, item 7): the
// relay authenticates first on every connection and the page follows what
// clothd granted. With the full token the controls work; with the read-only
// token they are disabled with a tooltip saying why, and the relay itself
// refuses to forward wind or debug; with a wrong token the page says
// "unauthorized" and the relay keeps retrying. Real clothd (--token-file,
// --readonly-token-file), real relay, headless Chromium.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/auth.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClothdConnection } from '../lib/clothd.js';
import {
  ARTIFACTS, CLOTHD_BIN, httpGet, launchChromium, openSocket, sleep, startClothd, startViewer,
  stop, waitFor, tearDown
} from './harness.js';

// Viewers start without the caller's CLOTHD_TOKEN unless a test gives one.
const ENV = { ...process.env };
delete ENV.CLOTHD_TOKEN;

const FULL = `full-${crypto.randomBytes(12).toString('hex')}`;
const READONLY = `readonly-${crypto.randomBytes(12).toString('hex')}`;
const WRONG = `wrong-${crypto.randomBytes(12).toString('hex')}`;
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-viewer-auth-'));
const FILE = {};
for (const [name, token] of Object.entries({ full: FULL, readonly: READONLY, wrong: WRONG })) {
  FILE[name] = path.join(TMP, `${name}.token`);
  fs.writeFileSync(FILE[name], `${token}\r\n`, { mode: 0o600 }); // CR/LF stripped by both sides
}
process.on('exit', () => fs.rmSync(TMP, { recursive: true, force: true }));

// The controls that change the simulation, which a read-only viewer disables.
const CONTROLS = ['#wind-x', '#wind-y', '#wind-z', '#wind-x-range', '#wind-y-range', '#wind-z-range', '#wind-zero', '#debug-toggle',
  '#sim-pause', '#sim-step', '#sim-reset'];

// The auth tests need a clothd with tokens (the lead's server side of item 7).
function clothdHasTokens() {
  if (!fs.existsSync(CLOTHD_BIN)) return false;
  const r = spawnSync(CLOTHD_BIN, ['--help'], { encoding: 'utf8', timeout: 5000 });
  return /--token-file/.test(`${r.stdout}${r.stderr}`) && /--readonly-token-file/.test(`${r.stdout}${r.stderr}`);
}
const NO_TOKENS = clothdHasTokens() ? false
  : `${CLOTHD_BIN} has no --token-file/--readonly-token-file (clothd's authentication, issue 9 item 7, is not built in)`;

describe('the relay reads its token', () => {
  it('exits 2, naming the source, on a token clothd could never accept', async () => {
    const short = path.join(TMP, 'short.token');
    fs.writeFileSync(short, 'tooshort\n');
    await assert.rejects(startViewer(1, ['--token-file', short], ENV), /exited \(2\).*--token-file .*short\.token: the token must be 16 to 1024 bytes on one line, not 8/s);
    await assert.rejects(startViewer(1, ['--token-file', path.join(TMP, 'missing')], ENV), /exited \(2\).*--token-file .*missing: cannot read it \(ENOENT\)/s);
    await assert.rejects(startViewer(1, [], { ...ENV, CLOTHD_TOKEN: 'x'.repeat(1025) }), /exited \(2\).*CLOTHD_TOKEN: the token must be 16 to 1024 bytes on one line, not 1025/s);
  });
});

describe('the viewer with clothd tokens', { timeout: 90000, skip: NO_TOKENS }, () => {
  let clothd;
  let driver;
  let browser;
  const viewers = [];
  const pageErrors = [];

  async function viewer(extra, env = ENV) {
    const v = await startViewer(clothd.port, extra, env);
    viewers.push(v);
    return v;
  }

  async function openPage(v) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(v.url);
    return page;
  }

  const hook = (page) => page.evaluate(() => window.__clothd);
  const relayState = async (v) => JSON.parse((await httpGet(v.port, '/api/state')).body);

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    clothd = await startClothd(0, ['--token-file', FILE.full, '--readonly-token-file', FILE.readonly]);
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    assert.equal((await driver.request('auth', { token: FULL })).access, 'full');
    const c = (await driver.request('create', { width: 16, height: 16, spacing: 0.1, origin: [-0.75, 2.2, 0] })).instance;
    await driver.request('pin', { instance: c, particles: [...Array(16).keys()] });
    for (let i = 0; i < 30; i++) await driver.request('step', { dt: 1 / 60, instances: [c] });
    browser = await launchChromium();
  });

  after(() => tearDown({ browser, connections: [driver], viewers, clothd }));

  it('with the full token: controls enabled, and the wind set on the page reaches clothd', async () => {
    const v = await viewer(['--token-file', FILE.full]);
    const page = await openPage(v);
    try {
      await waitFor('connected with full access', async () => {
        const h = await hook(page);
        return h.connected && h.access === 'full';
      });
      const st = await relayState(v);
      assert.equal(st.access, 'full');
      assert.equal(st.token, true);
      assert.equal(st.authError, null);
      for (const sel of CONTROLS) assert.equal(await page.locator(sel).isDisabled(), false, `${sel} enabled`);
      assert.equal(await page.locator('#readonly-note').isVisible(), false);
      await page.locator('input[name="wind-scope"][value="global"]').check();
      await page.locator('#wind-x').fill('2.5');
      await page.locator('#wind-x').press('Enter');
      await waitFor('globalWind x = 2.5 in clothd', async () => (await driver.request('status')).globalWind[0] === 2.5);
      await page.locator('#wind-zero').click();
      await waitFor('calm again', async () => (await driver.request('status')).globalWind.every((x) => x === 0));
      // The token stays between the relay and clothd.
      assert.doesNotMatch(JSON.stringify(st), new RegExp(FULL));
      assert.doesNotMatch(v.stderr(), new RegExp(FULL));
      assert.doesNotMatch(await page.content(), new RegExp(FULL));
    } finally {
      await page.close();
    }
  });

  it('with the read-only token: controls disabled with a tooltip, and the relay forwards no change', async () => {
    const v = await viewer(['--token-file', FILE.readonly]);
    const page = await openPage(v);
    try {
      await waitFor('connected with read-only access', async () => {
        const h = await hook(page);
        return h.connected && h.access === 'readonly' && h.frames && Object.keys(h.instances).length > 0;
      });
      assert.equal((await relayState(v)).access, 'readonly');
      for (const sel of CONTROLS) {
        assert.equal(await page.locator(sel).isDisabled(), true, `${sel} disabled`);
        assert.match(await page.locator(sel).getAttribute('title'), /read-only token/);
      }
      assert.match(await page.locator('#wind-axes').getAttribute('title'), /read-only token/);
      assert.match(await page.locator('#debug-label').getAttribute('title'), /read-only token/);
      assert.equal(await page.locator('#readonly-note').isVisible(), true);
      assert.match(await page.locator('#conn-text').textContent(), /connected to clothd .* · read-only$/);
      // Local display controls stay usable.
      assert.equal(await page.locator('#grid-toggle').isDisabled(), false);
      await sleep(300);
      await page.screenshot({ path: path.join(ARTIFACTS, 'viewer-readonly-page.png') });

      // The page's own socket, its controls forced back on by a script:
      // the relay refuses, and says why.
      await page.evaluate(() => {
        const x = document.getElementById('wind-x');
        x.disabled = false;
        x.value = '7';
        x.dispatchEvent(new Event('change'));
      });
      await waitFor('the page shows the refusal', async () => /^read-only: /.test(await page.locator('#error').textContent()));
      await page.keyboard.press('d');
      // A raw WebSocket from the viewer's own origin: refused too.
      const s = await openSocket(v.port, { origin: v.origin });
      assert.equal(s.hello.access, 'readonly');
      const errors = [];
      s.ws.on('message', (data, isBinary) => {
        if (!isBinary) {
          const m = JSON.parse(data.toString('utf8'));
          if (m.type === 'error') errors.push(m.message);
        }
      });
      s.ws.send(JSON.stringify({ type: 'wind', wind: [6, 6, 6] }));
      s.ws.send(JSON.stringify({ type: 'wind', wind: [6, 6, 6], instance: 1 }));
      s.ws.send(JSON.stringify({ type: 'debug', enabled: true }));
      s.ws.send(JSON.stringify({ type: 'sim', action: 'pause' }));
      await waitFor('four refusals', () => errors.length === 4);
      s.ws.close();
      assert.match(errors[0], /^read-only: the viewer holds a read-only token: .* \("wind" not sent to clothd\)$/);
      assert.match(errors[2], /\("debug" not sent to clothd\)$/);
      assert.match(errors[3], /\("sim" not sent to clothd\)$/);
      await sleep(300);
      const st = await driver.request('status');
      assert.deepEqual(st.globalWind, [0, 0, 0], 'the global wind did not change');
      assert.equal(st.debug, false, 'debug is still off');
      assert.ok(st.instances.every((i) => i.enabled), 'nothing paused');
      const own = await driver.request('get', { instance: st.instances[0].instance });
      assert.deepEqual(own.wind, [0, 0, 0], 'the instance wind did not change');
    } finally {
      await page.close();
    }
  });

  it('takes CLOTHD_TOKEN from the environment when no --token-file is given', async () => {
    const v = await viewer([], { ...ENV, CLOTHD_TOKEN: READONLY });
    await waitFor('read-only access from the environment', async () => (await relayState(v)).access === 'readonly');
  });

  it('without a token, says clothd wants one', async () => {
    const v = await viewer([]);
    const st = await waitFor('the refusal in the state', async () => {
      const s = await relayState(v);
      return s.authError ? s : null;
    });
    assert.equal(st.connected, false);
    assert.equal(st.token, false);
    assert.match(st.authError, /^unauthorized: cmd: "subscribe" needs auth first$/);
    assert.match(v.stderr(), /refused the viewer \(unauthorized: .*\): give the viewer the token with --token-file or CLOTHD_TOKEN/);
  });

  it('with a wrong token: the page shows "unauthorized", and the relay retries until clothd takes it', async () => {
    const v = await viewer(['--token-file', FILE.wrong]);
    const page = await openPage(v);
    try {
      await waitFor('the unauthorized state', async () => (await page.locator('#conn').getAttribute('data-state')) === 'unauthorized');
      assert.match(await page.locator('#conn-text').textContent(), /refused the viewer's token \(unauthorized: token: wrong token\) — retrying/);
      assert.equal(await page.locator('#disconnected').isVisible(), true);
      assert.match(await page.locator('#disconnected').textContent(), /unauthorized: token: wrong token/);
      const h = await hook(page);
      assert.equal(h.connected, false);
      assert.equal(h.authError, 'unauthorized: token: wrong token');
      await page.screenshot({ path: path.join(ARTIFACTS, 'viewer-unauthorized-page.png') });
      // It keeps trying every second, and says so on stderr once.
      await sleep(2500);
      assert.equal(v.stderr().match(/refused the viewer \(unauthorized: token: wrong token\): check --token-file/g)?.length, 1);
      // clothd restarted with that token: the next try gets in.
      const port = clothd.port;
      driver.close();
      await stop(clothd.child);
      clothd = await startClothd(port, ['--token-file', FILE.wrong]);
      await waitFor('connected with the new clothd', async () => (await page.locator('#conn').getAttribute('data-state')) === 'connected', 10000);
      assert.equal((await hook(page)).access, 'full');
      assert.match(v.stderr(), /accepts the token now/);
    } finally {
      await page.close();
    }
  });

  it('raised no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
