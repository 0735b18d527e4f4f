'use strict';
// Tokens against the real server (started with --token-file and
// --readonly-token-file): the token from the options or CLOTHD_TOKEN, `auth`
// before anything else, `access`, ping(), auth(), and the "unauthorized" code.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { Client, ClothdError, ConnectionClosed, Unauthorized, TOKEN_ENV } = require('..');
const { startServer } = require('../test-support/server.js');

const FULL = 'node-full-token-0123456789';
const READONLY = 'node-readonly-token-0123456789';

let server;
let open; // a server without tokens
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-auth-'));
  const full = path.join(tmp, 'full');
  const readonly = path.join(tmp, 'readonly');
  fs.writeFileSync(full, `${FULL}\n`);
  fs.writeFileSync(readonly, `${READONLY}\r\n`);
  server = await startServer(['--workers', '1', '--token-file', full, '--readonly-token-file', readonly]);
  open = await startServer(['--workers', '1']);
});

after(async () => {
  for (const s of [server, open]) if (s) await s.stop().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function connect(options) {
  return Client.connect({ ...server.address, token: '', ...options });
}

// Runs `fn` with CLOTHD_TOKEN set to `value`, restoring what was there.
function withEnv(value, fn) {
  const old = process.env[TOKEN_ENV];
  process.env[TOKEN_ENV] = value;
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env[TOKEN_ENV];
    else process.env[TOKEN_ENV] = old;
  }
}

async function rejectsUnauthorized(promise, message) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof Unauthorized && e instanceof ClothdError, `an Unauthorized, not ${e}`);
    assert.equal(e.code, 'unauthorized');
    assert.equal(e.message, message);
    assert.deepEqual(e.reply.error, { code: 'unauthorized', message });
    return true;
  });
}

test('a token in the options authenticates before anything else', async () => {
  const c = await connect({ token: FULL });
  try {
    assert.equal(c.access, 'full');
    assert.equal(c.token, FULL);
    const id = await c.createCloth({ width: 3, height: 3 });
    assert.equal((await c.step({ instances: [id] })).stepped, 1);
    const ms = await c.ping();
    assert.ok(ms >= 0 && ms < 5000, `ping ${ms} ms`);
    await c.destroy(id);
  } finally {
    await c.close();
  }
});

test('requests made before connect() go after auth', async () => {
  const c = new Client({ ...server.address, token: FULL });
  try {
    const status = c.status(); // connects on its own: auth is queued first
    assert.equal((await status).ok, true);
    assert.equal(c.access, 'full');
  } finally {
    await c.close();
  }
});

test('CLOTHD_TOKEN is the token when the options give none; "" disables it', async () => {
  const [c, off] = withEnv(READONLY, () => [new Client(server.address), new Client({ ...server.address, token: '' })]);
  try {
    assert.equal(c.token, READONLY);
    await c.connect();
    assert.equal(c.access, 'readonly');
    assert.equal(off.token, null);
    await off.connect();
    assert.equal(off.access, null);
    await rejectsUnauthorized(off.status(), 'cmd: "status" needs auth first');
    // An option wins over the environment.
    const full = withEnv(READONLY, () => new Client({ ...server.address, token: FULL }));
    await full.connect();
    assert.equal(full.access, 'full');
    await full.close();
  } finally {
    await c.close();
    await off.close();
  }
});

test('a wrong token rejects connect() with "unauthorized" and closes the client', async () => {
  const c = new Client({ ...server.address, token: `${FULL.slice(0, -1)}X` });
  const queued = c.status(); // queued behind auth: rejected with the same error
  const closed = new Promise((resolve) => c.once('close', resolve));
  await rejectsUnauthorized(c.connect(), 'token: wrong token');
  await rejectsUnauthorized(queued, 'token: wrong token');
  assert.equal(c.state, 'closed');
  assert.equal(c.access, null);
  assert.equal((await closed).code, 'unauthorized');
  await assert.rejects(c.ping(), ConnectionClosed);
});

test('the read-only token reads and subscribes; writes reject with "unauthorized"', async () => {
  const writer = await connect({ token: FULL });
  const c = await connect({ token: READONLY });
  try {
    const id = await writer.createCloth({ width: 4, height: 4 });
    assert.equal(c.access, 'readonly');
    assert.equal((await c.get(id)).positions.length, 3 * 16);
    assert.equal((await c.request('topology', { instance: id })).triangles.length, 3 * 2 * 3 * 3);
    assert.ok((await c.status()).instances.some((s) => s.instance === id));
    await c.ping();
    const writes = {
      create: () => c.createCloth({ width: 3, height: 3 }),
      step: () => c.step(),
      wind: () => c.wind([1, 0, 0]),
      pin: () => c.pin(id, 0),
      set: () => c.set(id, { mass: 2 }),
      debug: () => c.debug(true),
      destroy: () => c.destroy(id),
    };
    for (const [cmd, call] of Object.entries(writes))
      await rejectsUnauthorized(call(), `cmd: "${cmd}" is not allowed with the read-only token`);
    assert.equal((await writer.get(id)).frame, 0, 'nothing ran');
    assert.deepEqual(await writer.globalWind(), [0, 0, 0]);
    const frames = c.frames({ instance: id });
    await c.subscribe({ instance: id });
    await writer.step({ instances: [id] });
    assert.equal((await frames.next()).value.frame, 0);
    assert.equal((await frames.next()).value.frame, 1);
    await frames.return();
    await writer.destroy(id);
  } finally {
    await c.close();
    await writer.close();
  }
});

test('auth() upgrades the connection; a wrong token keeps the access it had', async () => {
  const c = await connect();
  try {
    await rejectsUnauthorized(c.ping(), 'cmd: "ping" needs auth first');
    assert.equal(await c.auth(READONLY), 'readonly');
    assert.deepEqual([c.access, c.token], ['readonly', READONLY]);
    await rejectsUnauthorized(c.auth('not-the-token-at-all-xxxx'), 'token: wrong token');
    assert.deepEqual([c.access, c.token], ['readonly', READONLY]);
    assert.equal(c.state, 'open');
    assert.equal(await c.auth(FULL), 'full'); // answered after the 100 ms pause
    const id = await c.createCloth({ width: 2, height: 2 });
    await c.destroy(id);
  } finally {
    await c.close();
  }
});

test('a server without tokens grants full access to any token', async () => {
  const c = await Client.connect({ ...open.address, token: 'whatever-it-is' });
  const plain = await Client.connect({ ...open.address, token: '' });
  try {
    assert.equal(c.access, 'full');
    assert.equal(plain.access, null);
    assert.equal(await plain.auth('anything'), 'full');
    assert.ok((await c.ping()) >= 0);
  } finally {
    await c.close();
    await plain.close();
  }
});
