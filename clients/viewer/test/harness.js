// What the viewer's end-to-end tests share: the real clothd and the real
// viewer relay as child processes, headless Chromium, and raw HTTP and
// WebSocket requests with the exact headers a test wants.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const VIEWER_DIR = path.resolve(HERE, '..');
export const ROOT = path.resolve(VIEWER_DIR, '../..');
export const CLOTHD_BIN = path.resolve(ROOT, process.env.CLOTHD_BIN ?? 'build/clothd');
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(ROOT, process.env.VIEWER_ARTIFACTS ?? 'build/artifacts');

const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts a program and resolves with the first stdout line matching re;
// stderr() returns what it wrote to stderr so far.
export function startProcess(cmd, args, re, what, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    children.add(child);
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => reject(new Error(`${what}: no banner within 5 s; stderr: ${stderr}`)), 5000);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('exit', (code, sig) => {
      children.delete(child);
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? sig}) before its banner; stderr: ${stderr}`));
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const m = re.exec(line);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.once('exit', () => children.delete(child));
        resolve({ child, match: m, stderr: () => stderr });
      }
    });
  });
}

export function startClothd(port = 0, extra = []) {
  return startProcess(CLOTHD_BIN, ['--port', String(port), '--workers', '2', ...extra],
    /^clothd \S+ listening on 127\.0\.0\.1:(\d+) \(\d+ workers\)$/, 'clothd')
    .then((p) => ({ ...p, port: Number(p.match[1]) }));
}

// The relay, on a free port; `origin` is its own page's origin.
export function startViewer(clothdPort, extra = [], env = process.env) {
  return startProcess(process.execPath, [path.join(VIEWER_DIR, 'server.js'), '--clothd', `127.0.0.1:${clothdPort}`, '--port', '0', ...extra],
    /^viewer: (http:\/\/(\S+):(\d+)\/)$/, 'viewer server', env)
    .then((p) => ({ ...p, url: p.match[1], port: Number(p.match[3]), origin: p.match[1].slice(0, -1) }));
}

export async function stop(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 3000);
  await done;
  clearTimeout(t);
}

// A page of the viewer at `url` in a viewport of width x height, whose
// script errors and console errors (a missing favicon aside) go into
// `errors`, for the test to assert there were none.
export async function openViewerPage(browser, url, errors, { width = 1280, height = 800 } = {}) {
  const page = await browser.newPage({ viewport: { width, height } });
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/favicon/.test(m.text())) errors.push(m.text()); });
  await page.goto(url);
  return page;
}

// What every browser test checks before it starts anything: clothd built,
// Chromium installed, and the folder its screenshots go to.
export function requireTools() {
  assert.ok(fs.existsSync(CLOTHD_BIN), `${CLOTHD_BIN} missing: run make build/clothd (or set CLOTHD_BIN)`);
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install chromium (or set CHROMIUM)`);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}

// Ends what a test started, in an order that leaves nothing behind: the
// browser, the test's own connections to clothd, the relays, clothd. Any
// of them may be missing (a before() that failed half-way).
export async function tearDown({ browser, connections = [], viewers = [], clothd }) {
  await browser?.close().catch(() => {});
  for (const c of connections) c?.close();
  for (const v of viewers) await stop(v?.child);
  await stop(clothd?.child);
}

export async function waitFor(what, fn, timeoutMs = 10000, everyMs = 50) {
  const t0 = Date.now();
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// A GET with exactly this request target (no normalisation: "..", "%2f"
// reach the server as written) and these headers; resolves {status, body, headers}.
export function httpGet(port, target, headers = {}, address = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: address, port, path: target, method: 'GET', headers, setHost: !('Host' in headers) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Opens a WebSocket to the relay with these headers (Origin among them).
// Resolves {ws, hello} once the relay's hello arrives, or {status, body}
// when the handshake is refused.
export function openSocket(port, { origin, host, path: p = '/ws', address = '127.0.0.1' } = {}) {
  const headers = {};
  if (host !== undefined) headers.Host = host;
  const ws = new WebSocket(`ws://${address}:${port}${p}`, { origin, headers });
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const msg = JSON.parse(data.toString('utf8'));
      if (msg.type === 'hello') resolve({ ws, hello: msg });
    });
    ws.once('error', (err) => { if (!/Unexpected server response/.test(err.message)) reject(err); });
  });
}

export function launchChromium(extraArgs = []) {
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install chromium (or set CHROMIUM)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--enable-unsafe-swiftshader', ...extraArgs,
    ],
  });
}
