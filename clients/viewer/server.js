#!/usr/bin/env node
// clothd viewer: connects to clothd over TCP, subscribes to every instance and
// relays its binary frames unchanged to browsers over WebSocket, with JSON
// metadata (instances and their scenes, colliders, pins, wind, sleeping,
// debug flag, global wind) and each instance's render topology (triangles,
// read once) beside them.
// Serves the page (public/) and three.js (from node_modules) over HTTP.
// With clothd's --data-dir, a timeline replays a recorded journal to any
// frame (lib/timeline.js). Pages can pause, single-step and reset the
// simulation (lib/sim.js) and plot clothd's step time (lib/steptimes.js)
// and each instance's kinetic energy (lib/energy.js). Only its own page may drive it (Host and Origin
// rules, lib/access.js); with a token it authenticates to clothd, and a read-only token makes the
// whole viewer read-only.
//
//   node server.js [--clothd host:port] [--port N] [--host ADDR] [--quantize]
//                  [--channels velocities,normals] [--token-file PATH]
//                  [--allow-host NAME]... [--allow-origin ORIGIN]...

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { WebSocketServer } from 'ws';
import { ClothdConnection, loadToken, parseAddress } from './lib/clothd.js';
import { AccessPolicy, openStatic, parseAllowHost, parseAllowOrigin, staticFile } from './lib/access.js';
import { Timeline } from './lib/timeline.js';
import { SimControl } from './lib/sim.js';
import { StepTimes } from './lib/steptimes.js';
import { Energies } from './lib/energy.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PUBLIC = path.join(HERE, 'public');
const THREE_DIR = path.dirname(path.dirname(createRequire(import.meta.url).resolve('three')));

const RETRY_MS = 1000;          // reconnect to clothd this often while it is away
const POLL_MS = 1000;           // status poll (instances created / destroyed elsewhere)
const WS_HIGH_WATER = 1 << 20;  // a browser socket holding more than this is "slow"
const GET_BUDGET = 100000;      // particles re-read by `get` per poll for pins/colliders
const STALE_MS = 5000;          // an idle instance's `get` is re-read this often (pins moved elsewhere)
// Browser messages that change the simulation: never forwarded with a
// read-only token.
const WRITES = new Set(['wind', 'debug', 'sim']);
const READONLY_TEXT = 'the viewer holds a read-only token: it shows the simulation but cannot change it';
// Served folders, longest prefix first: three.js's module builds and its
// examples' modules (no package internals), nothing else under /vendor/,
// and the page.
// The page's frame decoder is the Node client's (public/frame.js imports
// it by the relative path that reaches it on disk, which in the browser
// resolves to this URL): its CommonJS file and errors.js, the one module
// it requires, wrapped as an ES module whose default export is its
// module.exports (nodeFrameModule). Nothing else of the Node client is
// served.
const NODE_FRAME_URL = '/node/lib/frame.js';
const NODE_LIB = path.join(HERE, '..', 'node', 'lib');
const NODE_FRAME_FILES = ['frame.js', 'errors.js'];
const MOUNTS = [
  { prefix: '/vendor/three/build/', dir: path.join(THREE_DIR, 'build') },
  { prefix: '/vendor/three/examples/jsm/', dir: path.join(THREE_DIR, 'examples', 'jsm') },
  { prefix: '/vendor/', dir: null },
  { prefix: '/api/', dir: null },
  { prefix: '/', dir: PUBLIC, index: 'index.html' },
];

const USAGE = `usage: node server.js [options]

Relays clothd frames to browsers and serves the live viewer page.

  --clothd HOST:PORT  clothd to connect to (default 127.0.0.1:7878)
  --port N            HTTP/WebSocket port (default 8080; 0 = any free port)
  --host ADDR         address to serve on (default 127.0.0.1)
  --quantize          ask clothd for 16-bit quantized frames (fewer bytes)
  --channels LIST     what frames carry besides positions, comma-separated:
                      velocities (the page can colour by speed), normals (the
                      page draws clothd's instead of computing them)
  --token-file PATH   authenticate to clothd with the token on the file's first
                      line (default: the environment variable CLOTHD_TOKEN, if set);
                      a read-only token makes the viewer read-only
  --allow-host NAME   also accept HTTP requests whose Host is NAME (NAME:PORT for
                      one port only), e.g. behind a reverse proxy; repeatable
  --allow-origin ORIGIN
                      also accept WebSocket connections from pages of ORIGIN
                      (e.g. https://viewer.example.com); repeatable
  --help              this text

Requests must name the viewer in their Host header (its address and port, or
localhost/127.0.0.1/[::1] when it listens on loopback); WebSocket connections
must come from the viewer's own page (Origin). Anything else gets 403.
`;

// "velocities,normals" -> ['velocities', 'normals'] (positions always come).
const CHANNELS = ['positions', 'velocities', 'normals'];
function parseChannels(text) {
  const list = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const c of list) {
    if (!CHANNELS.includes(c)) throw new Error(`--channels: unknown channel "${c}" (one of ${CHANNELS.join(', ')})`);
  }
  return [...new Set(list)].filter((c) => c !== 'positions');
}

export function parseArgs(argv) {
  const opts = {
    clothd: '127.0.0.1:7878', port: 8080, host: '127.0.0.1', quantize: false, channels: [],
    tokenFile: null, allowHosts: [], allowOrigins: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const value = () => {
      if (eq > 0 && a.startsWith('--')) return a.slice(eq + 1);
      if (i + 1 >= argv.length) throw new Error(`${name}: needs a value`);
      return argv[++i];
    };
    switch (name) {
      case '--clothd': opts.clothd = value(); break;
      case '--port': {
        const v = value();
        const p = Number(v);
        if (!/^\d+$/.test(v) || p > 65535) throw new Error(`--port: must be an integer in [0, 65535], not "${v}"`);
        opts.port = p;
        break;
      }
      case '--host': opts.host = value(); break;
      case '--quantize': opts.quantize = true; break;
      case '--channels': opts.channels = parseChannels(value()); break;
      case '--token-file': opts.tokenFile = value(); break;
      case '--allow-host': opts.allowHosts.push(parseAllowHost(value())); break;
      case '--allow-origin': opts.allowOrigins.push(parseAllowOrigin(value())); break;
      case '--help': case '-h': opts.help = true; break;
      default: throw new Error(`unknown option "${a}" (see --help)`);
    }
  }
  parseAddress(opts.clothd); // fails early on a malformed address
  return opts;
}

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

// Headers on every HTTP answer: no MIME sniffing, and the page is never
// framed by another site (a framed viewer could be clicked by that site).
const COMMON_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "frame-ancestors 'none'",
};

// The Node client's frame.js (and what it requires) as one ES module: each
// file runs in a function of (module, exports, require) as Node runs it,
// and `require` knows only NODE_FRAME_FILES. Read once, at the first
// request.
let nodeFrameText = null;
export function nodeFrameModule() {
  if (nodeFrameText !== null) return nodeFrameText;
  const factories = NODE_FRAME_FILES.map((name) => `${JSON.stringify(`./${name}`)}: function (module, exports, require) {
${fs.readFileSync(path.join(NODE_LIB, name), 'utf8')}
},`);
  nodeFrameText = `// clients/node/lib/${NODE_FRAME_FILES.join(', ')} as one ES module (served by the clothd viewer)
const factories = {
${factories.join('\n')}
};
const loaded = {};
function require(name) {
  if (!(name in factories)) throw new Error(\`frame.js: \${name} is not served to the browser\`);
  if (!(name in loaded)) {
    const module = { exports: {} };
    loaded[name] = module;
    factories[name].call(module.exports, module, module.exports, require);
  }
  return loaded[name].exports;
}
export default require('./frame.js');
`;
  return nodeFrameText;
}

function isFinite3(v) {
  return Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number' && Number.isFinite(x));
}

export class Viewer {
  constructor(opts, log = (...a) => console.error(...a)) {
    this.opts = opts;
    this.log = log;
    this.addr = parseAddress(opts.clothd);
    this.token = opts.token ?? null; // never sent anywhere but to clothd
    this.conn = null;
    this.connected = false;
    // What clothd granted this relay: 'full', 'readonly', or null while not
    // connected; authError: clothd's `unauthorized` message while it refuses.
    this.access = null;
    this.authError = null;
    this.refusals = new Set();   // refused Hosts/Origins already logged
    this.version = null;
    this.workers = null;
    this.debug = false;
    this.globalWind = [0, 0, 0];
    this.meta = new Map();       // instance id -> metadata sent to browsers
    this.scenes = null;          // status's scenes: [{scene, instances, ephemeral}], null without scenes
    this.latest = new Map();     // instance id -> newest frame (Buffer)
    // instance id -> the `topology` message for browsers (a JSON string), or
    // null when clothd could not give one (the page then falls back). Read
    // once per instance: an id never names another instance.
    this.topology = new Map();
    // The order topology requests were sent in (one connection: their
    // replies come in that order, each the state when it was answered), and
    // per instance the number of the one applied: a poll's reply, applied
    // only once the poll's other requests are back, must not overwrite a
    // tear's newer topology (#applyTopology).
    this.topologyAsked = 0;
    this.topologyApplied = new Map();
    this.clients = new Set();    // {ws, pending: Map(instance -> frame)}
    this.stopped = false;
    this.pollTimer = null;
    this.retryTimer = null;
    this.refreshing = null;
    this.refreshAgain = false;
    this.lastMetaJson = '';
    this.timeline = new Timeline({
      request: (cmd, fields) => this.#request(cmd, fields),
      broadcast: (obj) => this.#broadcastJson(obj),
      send: (client, obj) => this.#sendJson(client, obj),
      latest: (id) => this.latest.get(id),
      refresh: () => this.refresh(),
      flush: () => { for (const c of this.clients) this.#pump(c); },
    });
    this.sim = new SimControl({
      request: (cmd, fields) => this.#request(cmd, fields),
      batch: (list) => (this.conn && this.connected ? this.conn.requestBatch(list) : Promise.reject(new Error(`clothd ${this.opts.clothd}: not connected`))),
      broadcast: (obj) => this.#broadcastJson(obj),
      meta: () => this.meta,
      refresh: (o) => this.refresh(o),
      log: (text) => this.log(text),
      readOnly: () => this.access === 'readonly',
    });
    this.stepTimes = new StepTimes({
      request: (cmd, fields) => this.#request(cmd, fields),
      broadcast: (obj) => this.#broadcastJson(obj),
      watched: () => this.clients.size > 0,
    });
    this.energies = new Energies({
      request: (cmd, fields) => this.#request(cmd, fields),
      broadcast: (obj) => this.#broadcastJson(obj),
      watched: () => this.clients.size > 0,
    });
  }

  // ---- HTTP + WebSocket -------------------------------------------------

  async listen() {
    this.http = http.createServer((req, res) => this.#serve(req, res));
    this.wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
    this.wss.on('connection', (ws) => this.#onBrowser(ws));
    this.http.on('upgrade', (req, socket, head) => this.#upgrade(req, socket, head));
    await new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.port, this.opts.host, resolve);
    });
    const { port, address } = this.http.address();
    this.policy = new AccessPolicy({
      listenHost: this.opts.host, address, port, allowHosts: this.opts.allowHosts ?? [], allowOrigins: this.opts.allowOrigins ?? [],
    });
    const host = this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host;
    this.url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}/`;
    this.port = port;
    this.#connectClothd();
    return this.url;
  }

  async close() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pollTimer);
    this.stepTimes.stop();
    this.energies.stop();
    if (this.conn) this.conn.close();
    for (const c of this.clients) c.ws.terminate();
    await new Promise((resolve) => this.wss.close(() => resolve()));
    await new Promise((resolve) => this.http.close(() => resolve()));
  }

  // Logs a refused Host or Origin once (a page retrying would flood stderr).
  #logRefusal(what, value) {
    const key = `${what} ${value}`;
    if (this.refusals.has(key) || this.refusals.size >= 100) return;
    this.refusals.add(key);
    this.log(`viewer: refused ${what} ${JSON.stringify(value ?? null)}`);
  }

  // Why a request must be refused (its Host does not name this relay), or null.
  #hostRefusal(req) {
    const host = req.headers.host;
    if (this.policy.hostAllowed(host)) return null;
    this.#logRefusal('a request with Host', host);
    return `forbidden: Host ${JSON.stringify(host ?? '')} does not name this viewer (see --allow-host)\n`;
  }

  // The WebSocket handshake: Host and Origin first (403), then the path.
  #upgrade(req, socket, head) {
    socket.on('error', () => {});
    const refuse = (code, text) => {
      socket.once('finish', () => socket.destroy());
      socket.end(`HTTP/1.1 ${code} ${http.STATUS_CODES[code]}\r\nConnection: close\r\n`
        + `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
    };
    const hostRefusal = this.#hostRefusal(req);
    if (hostRefusal) return refuse(403, hostRefusal);
    const origin = req.headers.origin;
    if (!this.policy.originAllowed(origin)) {
      this.#logRefusal('a WebSocket from Origin', origin);
      return refuse(403, `forbidden: Origin ${JSON.stringify(origin ?? '')} is not this viewer's page (see --allow-origin)\n`);
    }
    if (req.url.replace(/\?.*$/s, '') !== '/ws') return refuse(404, 'not found\n');
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req));
  }

  #serve(req, res) {
    const hostRefusal = this.#hostRefusal(req);
    if (hostRefusal) {
      res.writeHead(403, { ...COMMON_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' }).end(hostRefusal);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...COMMON_HEADERS, Allow: 'GET, HEAD' }).end();
      return;
    }
    if (req.url.replace(/\?.*$/s, '') === '/api/state') {
      const browsers = [...this.clients].map((c) => ({ pending: c.pending.size, skipped: c.skipped }));
      const body = JSON.stringify({ ...this.#hello(), browsers });
      res.writeHead(200, { ...COMMON_HEADERS, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(body);
      return;
    }
    if (req.url.replace(/[?#].*$/s, '') === NODE_FRAME_URL) {
      const body = nodeFrameModule();
      res.writeHead(200, {
        ...COMMON_HEADERS,
        'Content-Type': MIME['.js'],
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'no-cache',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const send404 = () => res.writeHead(404, { ...COMMON_HEADERS, 'Content-Type': 'text/plain' }).end('not found\n');
    const found = staticFile(req.url, MOUNTS);
    if (!found) {
      send404();
      return;
    }
    openStatic(found, (file) => {
      if (!file) {
        send404();
        return;
      }
      res.writeHead(200, {
        ...COMMON_HEADERS,
        'Content-Type': MIME[path.extname(file.file)] ?? 'application/octet-stream',
        'Content-Length': file.stat.size,
        'Cache-Control': 'no-cache',
      });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file.file).pipe(res);
    });
  }

  #hello() {
    return {
      type: 'hello',
      clothd: `${this.addr.host}:${this.addr.port}`,
      quantize: this.opts.quantize,
      channels: this.opts.channels,
      connected: this.connected,
      token: this.token !== null,
      access: this.access,
      authError: this.authError,
      version: this.version,
      workers: this.workers,
      debug: this.debug,
      globalWind: this.globalWind,
      instances: this.#instanceList(),
      scenes: this.scenes,
      timeline: this.timeline.state(),
      sim: this.sim.state(),
      stepTimes: this.stepTimes.state(),
      energy: this.energies.state(),
    };
  }

  #instanceList() {
    return [...this.meta.values()].map(({ colliderCount, fetchedAt, ...m }) => m);
  }

  // Builds the `topology` message of one instance from clothd's reply.
  static topologyMessage(id, t) {
    return JSON.stringify({
      type: 'topology', instance: id, kind: t.type, particles: t.particles, triangles: t.triangles, uvs: t.uvs ?? null,
    });
  }

  #onBrowser(ws) {
    const client = { ws, pending: new Map(), skipped: 0 };
    this.clients.add(client);
    ws.on('close', () => this.clients.delete(client));
    ws.on('error', () => this.clients.delete(client));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let msg;
      try {
        msg = JSON.parse(data.toString('utf8'));
      } catch {
        return;
      }
      this.#onBrowserMessage(client, msg).catch((err) => this.#sendJson(client, { type: 'error', message: err.message }));
    });
    this.#sendJson(client, this.#hello());
    // Topologies before frames: the page draws an instance once it has both.
    for (const text of this.topology.values()) if (text && ws.readyState === ws.OPEN) ws.send(text);
    for (const [id, frame] of this.latest) client.pending.set(id, frame);
    this.#pump(client);
  }

  // Another client changed the wind: clothd says so at once (older clothds
  // do not, and the status poll or the idle re-read catches it instead).
  #onWindEvent(ev) {
    if (ev.instance === undefined) {
      this.globalWind = ev.wind;
      this.#broadcastJson({ type: 'wind', globalWind: this.globalWind });
      return;
    }
    const m = this.meta.get(ev.instance);
    if (!m) return;
    m.wind = ev.wind;
    this.#broadcastMeta(true);
  }

  async #onBrowserMessage(client, msg) {
    if (!msg || typeof msg !== 'object') return;
    if (WRITES.has(msg.type) && this.access === 'readonly') {
      throw new Error(`read-only: ${READONLY_TEXT} ("${msg.type}" not sent to clothd)`);
    }
    if (msg.type === 'wind') {
      if (!isFinite3(msg.wind)) throw new Error('wind: must be an array of 3 finite numbers');
      const fields = { wind: msg.wind };
      if (msg.instance !== undefined && msg.instance !== null) fields.instance = msg.instance;
      const reply = await this.#request('wind', fields);
      if (fields.instance === undefined) {
        this.globalWind = reply.wind;
        this.#broadcastJson({ type: 'wind', globalWind: this.globalWind });
      } else {
        // The wind wakes the instance too; the next status poll says so.
        const m = this.meta.get(fields.instance);
        if (m) m.wind = reply.wind;
        this.#broadcastMeta(true);
      }
    } else if (msg.type === 'debug') {
      if (typeof msg.enabled !== 'boolean') throw new Error('debug: "enabled" must be a boolean');
      const reply = await this.#request('debug', { enabled: msg.enabled });
      // clothd tells the other connections; this one's browsers learn it here.
      this.#setDebug(reply.enabled);
    } else if (msg.type === 'sim') {
      await this.sim.onMessage(msg);
    } else if (msg.type === 'refresh') {
      await this.refresh({ force: true });
    } else if (msg.type === 'timeline') {
      // Listing journals reads; opening one replays it into new instances.
      if (this.access === 'readonly' && msg.action !== 'list') {
        throw new Error(`read-only: ${READONLY_TEXT} (the timeline replays into new instances)`);
      }
      await this.timeline.onMessage(client, msg);
    }
  }

  #request(cmd, fields) {
    if (!this.conn || !this.connected) return Promise.reject(new Error(`clothd ${this.opts.clothd}: not connected`));
    return this.conn.request(cmd, fields);
  }

  #sendJson(client, obj) {
    if (client.ws.readyState === client.ws.OPEN) client.ws.send(JSON.stringify(obj));
  }

  #broadcastJson(obj) {
    const text = JSON.stringify(obj);
    for (const c of this.clients) if (c.ws.readyState === c.ws.OPEN) c.ws.send(text);
  }

  // Sends a client its pending frames while its socket keeps up. A slow
  // browser keeps only the newest frame per instance in `pending`.
  #pump(client) {
    const { ws, pending } = client;
    while (pending.size > 0 && ws.readyState === ws.OPEN && ws.bufferedAmount < WS_HIGH_WATER) {
      const [id, frame] = pending.entries().next().value;
      pending.delete(id);
      ws.send(frame, { binary: true }, () => {
        if (pending.size > 0) this.#pump(client);
      });
    }
  }

  #relayFrame(frame) {
    const id = frame.readUInt32LE(12);
    this.latest.set(id, frame);
    this.sim.noteFrame(id, Number(frame.readBigUInt64LE(16)), frame.readDoubleLE(24));
    // A replay steps through many frames: pages get the newest (flush()).
    const hold = this.timeline.replaying;
    for (const c of this.clients) {
      // An unsent older frame of this instance is replaced, never queued.
      if (c.pending.delete(id)) c.skipped++; // delete first: keeps insertion order fair across instances
      c.pending.set(id, frame);
      if (!hold) this.#pump(c);
    }
    if (!this.meta.has(id)) this.refresh().catch(() => {});
  }

  // ---- clothd side --------------------------------------------------------

  #connectClothd() {
    if (this.stopped) return;
    ClothdConnection.connect(this.addr.host, this.addr.port)
      .then((conn) => this.#onClothd(conn))
      .catch(() => {
        this.retryTimer = setTimeout(() => this.#connectClothd(), RETRY_MS);
      });
  }

  // A cloth tore (clothd's `topology` event): its particle count and
  // triangles changed. Read them again and hand them to every page, which
  // draws the instance anew from them.
  async #onTopologyEvent(conn, id) {
    const asked = ++this.topologyAsked;
    try {
      const t = await conn.request('topology', { instance: id });
      this.#applyTopology(id, asked, Viewer.topologyMessage(id, t));
    } catch {
      // Destroyed meanwhile: the next poll forgets it.
    }
  }

  // Keeps and sends (`text` null: keeps, the page falls back) the topology
  // of request number `asked` unless a later request's was applied; false
  // then.
  #applyTopology(id, asked, text) {
    if ((this.topologyApplied.get(id) ?? 0) > asked) return false;
    this.topologyApplied.set(id, asked);
    this.topology.set(id, text);
    if (text) for (const c of this.clients) if (c.ws.readyState === c.ws.OPEN) c.ws.send(text);
    return true;
  }

  async #onClothd(conn) {
    if (this.stopped) {
      conn.close();
      return;
    }
    this.conn = conn;
    conn.on('frame', (frame) => this.#relayFrame(frame));
    conn.on('event', (ev) => {
      if (ev.event === 'debug' && typeof ev.enabled === 'boolean') this.#setDebug(ev.enabled);
      if (ev.event === 'wind' && isFinite3(ev.wind)) this.#onWindEvent(ev);
      if (ev.event === 'topology' && Number.isInteger(ev.instance)) this.#onTopologyEvent(conn, ev.instance);
    });
    conn.on('close', () => {
      if (this.conn !== conn) return;
      this.conn = null;
      const was = this.connected;
      this.connected = false;
      this.access = null;
      clearInterval(this.pollTimer);
      this.timeline.forget();
      this.stepTimes.stop();
      this.energies.stop();
      this.sim.forget();
      if (was) {
        this.log(`viewer: lost clothd ${this.opts.clothd}; retrying every ${RETRY_MS / 1000} s`);
        this.#broadcastConnection();
      }
      if (!this.stopped) this.retryTimer = setTimeout(() => this.#connectClothd(), RETRY_MS);
    });
    try {
      // The token first, on every connection: nothing else is allowed before it.
      const access = await this.#authenticate(conn);
      const sub = { };
      if (this.opts.quantize) sub.quantize = true;
      if (this.opts.channels.length > 0) sub.channels = ['positions', ...this.opts.channels];
      await conn.request('subscribe', sub);
      const st = await conn.request('status');
      this.version = st.version ?? null;
      this.workers = st.workers ?? null;
      this.connected = true;
      this.access = access;
      if (this.authError) this.log(`viewer: clothd ${this.opts.clothd} accepts the token now`);
      this.authError = null;
      // A new clothd process may reuse ids: nothing read from the old one holds.
      this.meta.clear();
      this.topology.clear();
      this.topologyApplied.clear();
      this.lastMetaJson = '';
      this.log(`viewer: connected to clothd ${this.version ?? '?'} at ${this.opts.clothd}`
        + (access === 'readonly' ? ` with a read-only token (${READONLY_TEXT})` : ''));
      this.#broadcastConnection();
      await this.refresh({ force: true, status: st });
      this.pollTimer = setInterval(() => this.refresh().catch(() => {}), POLL_MS);
      this.stepTimes.start();
      this.energies.start();
    } catch (err) {
      if (err.code === 'unauthorized') this.#unauthorized(err);
      if (this.conn === conn) conn.close();
    }
  }

  // Sends the token, when the relay has one, and resolves with the access
  // clothd grants: 'full' or 'readonly'. Without a token the access is full
  // (clothd refuses the next command with `unauthorized` if it wants one).
  async #authenticate(conn) {
    if (this.token === null) return 'full';
    try {
      const reply = await conn.request('auth', { token: this.token });
      // An access this relay does not know is taken as the lesser one.
      return reply.access === undefined || reply.access === 'full' ? 'full' : 'readonly';
    } catch (err) {
      if (err.code !== 'unknown_command') throw err;
      // A clothd older than `auth` has no tokens: every client may do anything.
      if (!this.warnedNoAuth) this.log(`viewer: clothd ${this.opts.clothd} does not know "auth" (no tokens there); the token is not used`);
      this.warnedNoAuth = true;
      return 'full';
    }
  }

  // clothd refused the token (or wants one): said once on stderr and to
  // every page; the usual reconnect schedule tries again.
  #unauthorized(err) {
    const text = `unauthorized: ${err.serverMessage}`;
    const changed = text !== this.authError;
    this.authError = text;
    this.access = null;
    if (changed) {
      const hint = this.token === null ? 'give the viewer the token with --token-file or CLOTHD_TOKEN' : 'check --token-file / CLOTHD_TOKEN';
      this.log(`viewer: clothd ${this.opts.clothd} refused the viewer (${text}): ${hint}; retrying every ${RETRY_MS / 1000} s`);
    }
    this.#broadcastConnection();
  }

  #broadcastConnection() {
    this.#broadcastJson({
      type: 'connection', connected: this.connected, clothd: this.opts.clothd, version: this.version, workers: this.workers,
      access: this.access, authError: this.authError,
    });
  }

  #setDebug(enabled) {
    if (this.debug === enabled) return;
    this.debug = enabled;
    this.#broadcastJson({ type: 'debug', enabled });
  }

  // Re-reads the instance list (status) and, where needed, each instance's
  // pins and colliders (get). Concurrent calls coalesce into one more run.
  refresh({ force = false, status = null } = {}) {
    if (this.refreshing) {
      this.refreshAgain = true;
      if (force) this.refreshForce = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        let f = force;
        let st = status;
        do {
          this.refreshAgain = false;
          await this.#refreshOnce(f, st);
          f = this.refreshForce ?? false;
          this.refreshForce = false;
          st = null;
        } while (this.refreshAgain && this.connected);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  async #refreshOnce(force, status) {
    const conn = this.conn;
    if (!conn || !this.connected) return;
    const st = status ?? await conn.request('status');
    if (Array.isArray(st.globalWind) && JSON.stringify(st.globalWind) !== JSON.stringify(this.globalWind)) {
      this.globalWind = st.globalWind;
      this.#broadcastJson({ type: 'wind', globalWind: this.globalWind });
    }
    if (typeof st.debug === 'boolean') this.#setDebug(st.debug);
    const now = Date.now();
    const live = new Set();
    let budget = GET_BUDGET;
    const gets = [];
    for (const s of st.instances ?? []) {
      live.add(s.instance);
      const known = this.meta.get(s.instance);
      const changed = !known || force || known.colliderCount !== s.colliders
        || known.enabled !== s.enabled || known.unstable !== s.unstable;
      // Pins, collider moves and wind show in `get` only: small instances
      // are re-read each poll while they move (a sleeping one moves nothing
      // although its frame advances), and every few seconds while idle,
      // within a particle budget.
      const moving = known && known.frame !== s.frame && !s.sleeping;
      const stale = known && now - known.fetchedAt > STALE_MS;
      const cheap = (moving || stale) && s.particles <= budget;
      if (changed || cheap) {
        budget -= s.particles;
        const id = s.instance;
        const asked = ++this.topologyAsked;
        const topo = this.topology.has(id) ? null : conn.request('topology', { instance: id }).then(
          (t) => ({ asked, text: Viewer.topologyMessage(id, t), triangles: t.triangles.length / 3 }),
          (err) => (err.code === 'not_found' ? undefined : { asked, text: null, error: err.message }));
        gets.push(Promise.all([conn.request('get', { instance: id }), topo]).then(([g, t]) => ({ s, g, t }), () => null));
      } else if (known) {
        known.frame = s.frame;
        known.sleeping = s.sleeping ?? false;
        // A scene held or let go after the instance was made changes its tie.
        known.ephemeral = s.ephemeral ?? false;
      }
    }
    const results = (await Promise.all(gets)).filter((r) => r && r.t !== undefined); // null/undefined: destroyed meanwhile
    // New topologies first, so a page has them when the metadata names them.
    for (const { s, t } of results) {
      if (!t || !live.has(s.instance) || !this.#applyTopology(s.instance, t.asked, t.text)) continue;
      if (t.text === null) this.log(`viewer: no topology for instance ${s.instance} (${t.error}); the page draws its grid`);
    }
    for (const { s, g, t } of results) {
      const old = this.meta.get(s.instance);
      this.meta.set(s.instance, {
        instance: s.instance,
        type: g.type ?? s.type,
        // The instance's scene, for good (null: a clothd without scenes),
        // and whether a connection's close destroys it (its own tie or its
        // scene's).
        scene: s.scene ?? g.scene ?? null,
        ephemeral: s.ephemeral ?? g.ephemeral ?? false,
        width: g.width,
        height: g.height,
        particles: s.particles,
        constraints: s.constraints,
        colliderCount: s.colliders,
        fetchedAt: now,
        // 'ok': a `topology` message carries the triangles; 'unavailable':
        // clothd had none to give (an older clothd), the page draws the grid.
        topology: t ? (t.text ? 'ok' : 'unavailable') : old?.topology ?? 'unavailable',
        triangles: t ? (t.text ? t.triangles : null) : old?.triangles ?? null,
        enabled: g.enabled,
        unstable: g.unstable,
        sleeping: g.sleeping ?? false,
        frame: g.frame,
        windModel: g.windModel ?? null, // null: a clothd that does not say (the page assumes the default, aero)
        wind: g.wind ?? null,
        gravity: g.gravity ?? null,
        pinned: g.pinned ?? [],
        colliders: (g.colliders ?? []).map((c) => ({
          collider: c.collider, type: c.type, position: c.position, normal: c.normal, radius: c.radius, height: c.height,
          radius2: c.radius2, halfExtents: c.halfExtents, rotation: c.rotation, // tapered capsules, boxes
        })),
      });
    }
    // Every scene, those held with no instance yet included (null: a clothd
    // without scenes).
    this.scenes = Array.isArray(st.scenes)
      ? st.scenes.map((c) => ({ scene: c.scene, instances: c.instances, ephemeral: !!c.ephemeral })) : null;
    for (const id of [...this.meta.keys()]) {
      if (!live.has(id)) {
        this.meta.delete(id);
        this.latest.delete(id);
        this.topology.delete(id);
        this.topologyApplied.delete(id);
        for (const c of this.clients) c.pending.delete(id);
      }
    }
    this.#broadcastMeta(false);
    this.sim.onInstances();
  }

  #broadcastMeta(always) {
    const list = this.#instanceList();
    // `frame` changes every poll; only the state of the scene matters here.
    const json = JSON.stringify([list.map(({ frame, ...rest }) => rest), this.scenes]);
    if (!always && json === this.lastMetaJson) return;
    this.lastMetaJson = json;
    this.#broadcastJson({ type: 'instances', instances: list, scenes: this.scenes });
  }
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`viewer: ${err.message}`);
    process.exit(2);
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return;
  }
  try {
    opts.token = loadToken(opts.tokenFile);
  } catch (err) {
    console.error(`viewer: ${err.message}`);
    process.exit(2);
  }
  const viewer = new Viewer(opts);
  let url;
  try {
    url = await viewer.listen();
  } catch (err) {
    console.error(`viewer: cannot listen on ${opts.host}:${opts.port}: ${err.message}`);
    process.exit(1);
  }
  process.stdout.write(`viewer: ${url}\n`);
  console.error(`viewer: relaying clothd ${opts.clothd}${opts.quantize ? ' (quantized frames)' : ''}`
    + `${opts.channels.length > 0 ? ` with ${opts.channels.join(' and ')}` : ''}`
    + `${opts.token !== null ? ` with the token of ${opts.tokenFile !== null ? opts.tokenFile : 'CLOTHD_TOKEN'}` : ''}`);
  const stop = () => {
    viewer.close().then(() => process.exit(0), () => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
