// The relay takes orders only from its own page: a WebSocket from another
// origin, a request under another Host name (DNS rebinding), and paths that
// climb out of a served folder are refused. Against the real clothd and
// the real relay, with raw requests and with headless Chromium loading a
// page from another origin that tries to set the wind and turn debug on.
//
//   CLOTHD_BIN=build/clothd node --test clients/viewer/test/security.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { ClothdConnection } from '../lib/clothd.js';
import {
  CLOTHD_BIN, httpGet, launchChromium, openSocket, sleep, startClothd, startViewer, stop, waitFor,
  tearDown
} from './harness.js';

// One of this machine's non-loopback IPv4 addresses, if it has one.
const EXTERNAL = Object.values(os.networkInterfaces()).flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal && !i.address.startsWith('127.'))?.address ?? null;

// A page on another origin that tries to drive the relay, as a web page the
// user happens to visit could: open its WebSocket, set the global wind,
// turn debug on; and read /api/state.
function hostilePage(target) {
  return `<!doctype html><meta charset="utf-8"><title>elsewhere</title><script>
window.__ws = 'pending';
const ws = new WebSocket(${JSON.stringify(target.ws)});
ws.onopen = () => {
  ws.send(JSON.stringify({ type: 'wind', wind: [9, 8, 7] }));
  ws.send(JSON.stringify({ type: 'debug', enabled: true }));
  window.__ws = 'open';
};
ws.onerror = () => { if (window.__ws === 'pending') window.__ws = 'refused'; };
fetch(${JSON.stringify(target.state)}).then((r) => r.text()).then(() => { window.__state = 'read'; }, () => { window.__state = 'blocked'; });
</script>`;
}

function startHostileServer(relayPort) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(hostilePage({ ws: `ws://127.0.0.1:${relayPort}/ws`, state: `http://127.0.0.1:${relayPort}/api/state` }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port })));
}

describe('the relay answers only its own page', { timeout: 60000 }, () => {
  let clothd;
  let viewer;
  let driver;
  let hostile;
  let browser;

  // clothd's own view: neither the wind nor the debug flag moved.
  async function assertUntouched() {
    const st = await driver.request('status');
    assert.deepEqual(st.globalWind, [0, 0, 0], 'the global wind is unchanged');
    assert.equal(st.debug, false, 'debug is still off');
  }

  before(async () => {
    assert.ok(fs.existsSync(CLOTHD_BIN), `${CLOTHD_BIN} missing: run make build/clothd (or set CLOTHD_BIN)`);
    clothd = await startClothd();
    driver = await ClothdConnection.connect('127.0.0.1', clothd.port);
    await driver.request('create', { width: 8, height: 8, spacing: 0.1, origin: [0, 2, 0] });
    viewer = await startViewer(clothd.port);
    hostile = await startHostileServer(viewer.port);
    // rebind.test resolves to the relay's address, as a DNS-rebinding
    // attacker's name would once its short TTL has run out.
    browser = await launchChromium(['--host-resolver-rules=MAP rebind.test 127.0.0.1']);
    await waitFor('the relay connected to clothd', async () => (await httpGet(viewer.port, '/api/state')).body.includes('"connected":true'));
  });

  after(async () => {
    if (hostile) await new Promise((r) => hostile.server.close(r));
    await tearDown({ browser, connections: [driver], viewers: [viewer], clothd });
  });

  it('refuses a WebSocket from another origin with 403, without upgrading', async () => {
    const p = viewer.port;
    for (const origin of [
      `http://127.0.0.1:${hostile.port}`, // another port on the same machine is another origin
      'http://evil.example',
      `http://rebind.test:${p}`,
      `https://127.0.0.1:${p}`,           // another scheme
      'null',                             // sandboxed frames, file:// pages
      `http://127.0.0.1:${p}/ws`,         // not an origin
      undefined,                          // no Origin at all
    ]) {
      const r = await openSocket(p, { origin });
      assert.equal(r.status, 403, `Origin ${origin}: want 403, got ${r.status ?? 'an open socket'}`);
      assert.match(r.body, /^forbidden: Origin .* is not this viewer's page/);
      r.ws?.close();
    }
    await sleep(200);
    assert.deepEqual(JSON.parse((await httpGet(p, '/api/state')).body).browsers, [], 'no browser connected');
    assert.match(viewer.stderr(), /refused a WebSocket from Origin "http:\/\/evil\.example"/);
  });

  it('takes a WebSocket from its own origin and its loopback aliases', async () => {
    const p = viewer.port;
    for (const origin of [viewer.origin, `http://localhost:${p}`, `http://[::1]:${p}`]) {
      const r = await openSocket(p, { origin });
      assert.equal(r.status, undefined, `Origin ${origin} refused: ${r.body}`);
      assert.equal(r.hello.connected, true);
      assert.equal(r.hello.access, 'full');
      r.ws.close();
    }
  });

  it('refuses a wrong Host with 403 on every path, the WebSocket too', async () => {
    const p = viewer.port;
    for (const host of [`rebind.test:${p}`, 'rebind.test', `evil.example:${p}`, `127.0.0.1:${p + 1}`, `localhost:${p}.evil.example`, '']) {
      for (const target of ['/api/state', '/', '/index.html', '/viewer.js', '/vendor/three/build/three.module.js', '/no-such-file']) {
        const r = await httpGet(p, target, { Host: host });
        assert.equal(r.status, 403, `Host "${host}" ${target}: ${r.status}`);
        assert.match(r.body, /^forbidden: Host .* does not name this viewer/);
        assert.doesNotMatch(r.body, /globalWind|instances/);
      }
      if (host === '') continue; // node's client replaces an empty Host with the real one
      const ws = await openSocket(p, { origin: viewer.origin, host });
      assert.equal(ws.status, 403, `WebSocket with Host "${host}"`);
      assert.match(ws.body, /^forbidden: Host/);
    }
  });

  it('answers the right Host: its address and the loopback aliases', async () => {
    const p = viewer.port;
    for (const host of [`127.0.0.1:${p}`, `localhost:${p}`, `[::1]:${p}`, `LOCALHOST:${p}`]) {
      const r = await httpGet(p, '/api/state', { Host: host });
      assert.equal(r.status, 200, `Host ${host}`);
      assert.equal(JSON.parse(r.body).type, 'hello');
      const page = await httpGet(p, '/', { Host: host });
      assert.equal(page.status, 200);
      assert.match(page.body, /<title>clothd viewer<\/title>/);
      assert.equal(page.headers['x-frame-options'], 'DENY', 'the page cannot be framed by another site');
    }
  });

  it('gives 404 for paths that climb, however they are encoded', async () => {
    const p = viewer.port;
    for (const target of [
      '/vendor/three/build/..%2fpackage.json',
      '/vendor/three/build/..%2Fpackage.json',
      '/vendor/three/build/%2e%2e/package.json',
      '/vendor/three/build/%2E%2E%2Fpackage.json',
      '/vendor/three/build/..%5cpackage.json',
      '/vendor/three/build/../package.json',
      '/vendor/three/build/./three.module.js',
      '/vendor/three/build/%2e/three.module.js',
      '/vendor/three/build/three.module.js%00.png',
      '/vendor/three/build/..\\package.json',
      '/vendor/three/examples/jsm/..%2f..%2fpackage.json',
      '/vendor/three/package.json',
      '/vendor/three/src/Three.js',
      '/..%2fserver.js',
      '/%2e%2e/server.js',
      '/..%2flib%2fclothd.js',
      '/%252e%252e/server.js',
      '/%E0%A4%A',
      '/api/nothing',
      // Of the Node client only its frame decoder is served.
      '/node/lib/errors.js',
      '/node/lib/parser.js',
      '/node/index.js',
      '/node/package.json',
      '/node/lib/../index.js',
    ]) {
      const r = await httpGet(p, target);
      assert.equal(r.status, 404, `${target}: ${r.status}`);
      assert.equal(r.body, 'not found\n');
    }
    // What is there is still served.
    for (const [target, type] of [
      ['/', /text\/html/], ['/viewer.js', /javascript/], ['/frame.js?v=1', /javascript/],
      ['/node/lib/frame.js', /javascript/],
      ['/vendor/three/build/three.module.js', /javascript/], ['/vendor/three/examples/jsm/controls/OrbitControls.js', /javascript/],
    ]) {
      const r = await httpGet(p, target);
      assert.equal(r.status, 200, target);
      assert.match(r.headers['content-type'], type);
    }
  });

  it('lets a reverse proxy through with --allow-host and --allow-origin', async () => {
    const v = await startViewer(clothd.port, ['--allow-host', 'viewer.example.com', '--allow-origin', 'https://viewer.example.com']);
    try {
      assert.equal((await httpGet(v.port, '/api/state', { Host: 'viewer.example.com' })).status, 200);
      assert.equal((await httpGet(v.port, '/api/state', { Host: 'viewer.example.com:443' })).status, 200);
      assert.equal((await httpGet(v.port, '/api/state', { Host: 'other.example.com' })).status, 403);
      const ok = await openSocket(v.port, { origin: 'https://viewer.example.com', host: 'viewer.example.com' });
      assert.equal(ok.hello?.type, 'hello');
      ok.ws.close();
      assert.equal((await openSocket(v.port, { origin: 'https://other.example.com', host: 'viewer.example.com' })).status, 403);
      // A name allowed for Host is the relay's own name: its http:// page is its own.
      const plain = await openSocket(v.port, { origin: 'http://viewer.example.com', host: 'viewer.example.com' });
      assert.equal(plain.hello?.type, 'hello');
      plain.ws.close();
    } finally {
      await stop(v.child);
    }
  });

  it('on one non-loopback address: that address only, no loopback aliases', { skip: EXTERNAL ? false : 'this machine has no non-loopback IPv4 address' }, async () => {
    const v = await startViewer(clothd.port, ['--host', EXTERNAL]);
    try {
      assert.equal(v.url, `http://${EXTERNAL}:${v.port}/`);
      const get = (host) => httpGet(v.port, '/api/state', { Host: host }, EXTERNAL);
      assert.equal((await get(`${EXTERNAL}:${v.port}`)).status, 200);
      for (const host of [`localhost:${v.port}`, `127.0.0.1:${v.port}`, `rebind.test:${v.port}`]) assert.equal((await get(host)).status, 403, host);
      const ok = await openSocket(v.port, { address: EXTERNAL, origin: v.origin });
      assert.equal(ok.hello?.type, 'hello');
      ok.ws.close();
      assert.equal((await openSocket(v.port, { address: EXTERNAL, origin: `http://localhost:${v.port}` })).status, 403);
    } finally {
      await stop(v.child);
    }
  });

  it('on every address (0.0.0.0): the machine\'s own addresses and the loopback names', async () => {
    const v = await startViewer(clothd.port, ['--host', '0.0.0.0']);
    try {
      const hosts = [`127.0.0.1:${v.port}`, `localhost:${v.port}`, `[::1]:${v.port}`];
      if (EXTERNAL) hosts.push(`${EXTERNAL}:${v.port}`);
      for (const host of hosts) assert.equal((await httpGet(v.port, '/api/state', { Host: host })).status, 200, host);
      for (const host of [`rebind.test:${v.port}`, `0.0.0.0:${v.port}`, `198.51.100.254:${v.port}`]) {
        assert.equal((await httpGet(v.port, '/api/state', { Host: host })).status, 403, host);
      }
      if (EXTERNAL) {
        const ok = await openSocket(v.port, { origin: `http://${EXTERNAL}:${v.port}` });
        assert.equal(ok.hello?.type, 'hello');
        ok.ws.close();
      }
      assert.equal((await openSocket(v.port, { origin: `http://rebind.test:${v.port}` })).status, 403);
    } finally {
      await stop(v.child);
    }
  });

  it('keeps a page from another origin in Chromium from setting the wind or debug', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${hostile.port}/`);
      const result = await waitFor('the hostile page done', () => page.evaluate(() => (window.__ws !== 'pending' && window.__state ? [window.__ws, window.__state] : null)));
      assert.equal(result[0], 'refused', 'the relay refused the WebSocket');
      assert.equal(result[1], 'blocked', 'the page could not read /api/state');
      await sleep(500);
      await assertUntouched();
    } finally {
      await page.close();
    }
  });

  it('keeps a DNS-rebound name out in Chromium', async () => {
    const page = await browser.newPage();
    try {
      // The attacker's name now points at the relay: same origin for the
      // browser, so only the Host rule stands between the page and clothd.
      const res = await page.goto(`http://rebind.test:${viewer.port}/api/state`);
      assert.equal(res.status(), 403);
      assert.doesNotMatch(await page.content(), /globalWind/);
      const res2 = await page.goto(`http://rebind.test:${viewer.port}/`);
      assert.equal(res2.status(), 403);
      const ws = await page.evaluate((port) => new Promise((resolve) => {
        const s = new WebSocket(`ws://rebind.test:${port}/ws`);
        s.onopen = () => {
          s.send(JSON.stringify({ type: 'wind', wind: [9, 8, 7] }));
          s.send(JSON.stringify({ type: 'debug', enabled: true }));
          resolve('open');
        };
        s.onerror = () => resolve('refused');
      }), viewer.port);
      assert.equal(ws, 'refused');
      await sleep(500);
      await assertUntouched();
      // The real page under a loopback alias works.
      await page.goto(`http://localhost:${viewer.port}/`);
      await waitFor('the page connected under localhost', () => page.evaluate(() => window.__clothd?.connected === true));
    } finally {
      await page.close();
    }
  });
});
