'use strict';
// The handshake: the client sends `hello` on connect and keeps the reply
// (features, limits, version); required features fail the connect naming
// the server and what it lacks; a call needing a feature the server lacks
// rejects with IncompatibleServer before anything is sent (requests queued
// before the reply included), against the real clothd (with and without
// --data-dir, with a token) and a fake clothd from before the handshake
// (unknown_command to hello), which stays usable for plain commands.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const { Client, Scene, IncompatibleServer, FeatureMissing, Unauthorized, FEATURES } = require('..');
const { startServer } = require('../test-support/server.js');

const BASE = ['warnings', 'strict', 'scenes', 'ephemeral', 'softbody', 'mesh', 'skin', 'budget'];
// What a server without --data-dir lists: BASE, then "shm" (its last, unless --shm-mb 0).
const LISTED = [...BASE, 'shm'];
const TOKEN = 'node-hello-token-0123456789';

let plain; // no --data-dir
let data; // --data-dir
let guarded; // --token-file
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-hello-'));
  fs.writeFileSync(path.join(tmp, 'token'), `${TOKEN}\n`);
  [plain, data, guarded] = await Promise.all([
    startServer(['--workers', '1', '--max-instances', '77']),
    startServer(['--workers', '1', '--data-dir', tmp]),
    startServer(['--workers', '1', '--token-file', path.join(tmp, 'token')]),
  ]);
});

after(async () => {
  for (const s of [plain, data, guarded]) if (s) await s.stop().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** The server's count of `cmd` requests (stats), read on a fresh connection. */
async function served(server, cmd) {
  const c = await Client.connect(server.address);
  try {
    return (await c.serverStats()).requests[cmd];
  } finally {
    await c.close();
  }
}

function incompatible(endpoint, missing, text) {
  return (err) => {
    assert.ok(err instanceof FeatureMissing && err instanceof IncompatibleServer, err.stack);
    assert.equal(err.name, 'FeatureMissing');
    assert.equal(err.code, 'incompatible_server');
    assert.equal(err.endpoint, endpoint);
    assert.deepEqual(err.features, missing);
    assert.ok(err.message.startsWith(`clothd endpoint ${endpoint}: `), err.message);
    assert.ok(err.message.includes(text), `${err.message} lacks ${text}`);
    return true;
  };
}

test('connect keeps the hello: features, limits, version', async () => {
  const c = await Client.connect(plain.address);
  try {
    assert.deepEqual([...c.features], LISTED);
    assert.deepEqual(FEATURES, [...BASE, 'snapshots', 'recording', 'shm'], 'FEATURES lists them in the server\'s order');
    assert.equal(c.serverVersion, plain.version);
    assert.equal(c.limits.instances, 77);
    assert.deepEqual(Object.keys(c.limits).sort(), ['connections', 'frameBytes', 'instances', 'lineBytes',
      'outputBytes', 'particles', 'particlesPerInstance', 'stepWork']);
    assert.ok(Object.values(c.limits).every((v) => Number.isInteger(v) && v > 0));
    assert.equal(c.helloReply.protocol, 1);
    assert.ok(c.helloReply.commands.includes('scenes'));
    assert.equal(c.supports('scenes'), true);
    assert.equal(c.supports('snapshots'), false);
    assert.equal(c.endpoint, `127.0.0.1:${plain.port}`);
  } finally {
    await c.close();
  }
  const d = await Client.connect(data.address);
  assert.deepEqual([...d.features], [...BASE, 'snapshots', 'recording', 'shm']);
  await d.close();
  const off = await Client.connect({ ...plain.address, hello: false });
  assert.equal(off.features, null, 'hello: false asks nothing');
  assert.equal(off.supports('scenes'), false);
  await off.close();
});

test('required features: present, connected; missing, refused by name', async () => {
  const c = await Client.connect({ ...data.address, require: ['scenes', 'snapshots', 'recording'] });
  await c.close();
  const endpoint = `127.0.0.1:${plain.port}`;
  const refused = new Client({ ...plain.address, require: ['scenes', 'snapshots', 'recording'] });
  await assert.rejects(refused.connect(), incompatible(endpoint, ['snapshots', 'recording'],
    'lacks the features "snapshots", "recording" required by this client (its hello lists: warnings, strict, scenes'));
  await assert.rejects(Client.connect({ ...plain.address, require: ['snapshots'] }), (err) =>
    err.neededBy === 'required by this client'
    && err.message.endsWith('; clothd lists snapshots and recording only when started with --data-dir)'));
  assert.equal(refused.state, 'closed');
  assert.throws(() => new Client({ require: ['scene'] }), /require: unknown feature "scene"/);
});

test('a call needing a missing feature rejects unsent; requests queued before the hello too', async () => {
  const endpoint = `127.0.0.1:${plain.port}`;
  const saves = await served(plain, 'save');
  const c = new Client(plain.address); // not connected: the first request connects
  const early = c.save('nope');
  const ping = c.ping();
  await assert.rejects(early, incompatible(endpoint, ['snapshots'], 'lacks the feature "snapshots" needed by "save"'));
  assert.ok((await ping) >= 0, 'the request behind it went');
  await assert.rejects(c.record('nope'), incompatible(endpoint, ['recording'], 'needed by "record"'));
  await assert.rejects(c.load('nope'), (err) => err instanceof FeatureMissing && err.neededBy === 'needed by "load"');
  // A memory snapshot needs no --data-dir.
  const id = await c.createCloth({ width: 3, height: 3, ephemeral: true });
  assert.equal((await c.save('mem', { memory: true, instance: id })).instances, 1);
  await assert.rejects(c.load('mem', { memory: true }), (e) => e.code === 'invalid_argument'); // its id is live
  assert.equal(await served(plain, 'save'), saves + 1, 'only the memory save reached the server');
  assert.equal(c.pendingRequests, 0);
  await c.close();
});

test('a hello refused before auth: nothing known until auth, which asks again', async () => {
  const c = await Client.connect({ ...guarded.address, token: '' });
  try {
    assert.equal(c.features, null);
    await assert.rejects(c.ping(), Unauthorized);
    await c.auth(TOKEN);
    assert.deepEqual([...c.features], LISTED);
  } finally {
    await c.close();
  }
  await assert.rejects(Client.connect({ ...guarded.address, token: '', require: ['scenes'] }), (err) =>
    err instanceof Unauthorized && err.message === 'cmd: "hello" needs auth first');
  const ok = await Client.connect({ ...guarded.address, token: TOKEN, require: ['scenes'] });
  assert.equal(ok.access, 'full');
  assert.equal(ok.supports('scenes'), true);
  await ok.close();
});

// A clothd from before the handshake: unknown_command to hello, ok to the
// rest (ping with pong, create with an instance, step with stepped).
async function oldServer() {
  const seen = [];
  const srv = net.createServer((socket) => {
    let rest = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        seen.push(line);
        const { id, cmd } = JSON.parse(line);
        const reply = cmd === 'hello'
          ? { id, ok: false, error: { code: 'unknown_command', message: 'unknown command "hello"' } }
          : { id, ok: true, ...(cmd === 'ping' ? { pong: true } : cmd === 'create' ? { instance: 1 } : {}),
            ...(cmd === 'step' ? { stepped: 0 } : {}) };
        socket.write(`${JSON.stringify(reply)}\n`);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  return { port, seen, close: () => new Promise((resolve) => srv.close(resolve)) };
}

test('a server without hello serves plain commands; feature calls and requirements fail naming it', async () => {
  const old = await oldServer();
  const endpoint = `127.0.0.1:${old.port}`;
  try {
    const c = new Client({ port: old.port });
    const early = c.createSoftbody({ shape: 'ball' }); // queued before the hello reply
    await c.connect();
    await assert.rejects(early, incompatible(endpoint, ['softbody'],
      'lacks the feature "softbody" needed by "create" (it does not answer hello, like a clothd from before the '
      + 'handshake: no features known)'));
    assert.deepEqual(c.features, []);
    assert.equal(c.serverVersion, null);
    assert.equal(c.helloReply, null);
    assert.ok((await c.ping()) >= 0);
    assert.equal(await c.createCloth({ width: 2, height: 2 }), 1);
    assert.equal((await c.step(1 / 60)).stepped, 0);
    await assert.rejects(c.scenes(), incompatible(endpoint, ['scenes'], 'needed by "scenes"'));
    await assert.rejects(new Scene(c, 'npc-capes').step(1 / 60), incompatible(endpoint, ['scenes'], '"step"'));
    await assert.rejects(c.createCloth({ ephemeral: true }), incompatible(endpoint, ['ephemeral'], '"create"'));
    await assert.rejects(c.hello({ strict: true }), incompatible(endpoint, ['strict'], '"hello"'));
    await c.close();

    await assert.rejects(Client.connect({ port: old.port, require: ['scenes'] }), incompatible(endpoint, ['scenes'],
      'lacks the feature "scenes" required by this client (it does not answer hello'));
    await assert.rejects(Client.connect({ port: old.port, strict: true }), incompatible(endpoint, ['strict'],
      'required by this client'));
    const sent = old.seen.join('\n');
    assert.ok(!/softbody|"scene|ephemeral/.test(sent), `nothing refused was sent: ${sent}`);
    assert.match(sent, /"cmd":"ping"/);
  } finally {
    await old.close();
  }
});
