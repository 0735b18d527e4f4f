'use strict';
// The connection: backpressure, closing (by the client, by the server),
// and a broken stream (from a fake server) failing loudly.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');

const { Client, ClothdError, ConnectionClosed, ProtocolError } = require('..');
const { startServer } = require('../test-support/server.js');

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  if (server) await server.stop('SIGKILL').catch(() => {});
});

async function sendMany(client, id, n) {
  const order = [];
  const calls = [];
  for (let i = 0; i < n; i++) {
    calls.push(
      client.wind([i, 0, 0], id).then((w) => {
        order.push(i);
        assert.equal(w[0], i, `reply ${i}`);
      }),
    );
  }
  await Promise.all(calls);
  return order;
}

test('20,000 requests sent without awaiting each all resolve, in order, in few writes', async () => {
  const c = await Client.connect(server.address);
  try {
    const id = await c.createCloth({ width: 2, height: 2 });
    const n = 20000;
    const done = sendMany(c, id, n);
    assert.equal(c.pendingRequests, n);
    assert.equal(c.stats.queuedRequests, n, 'queued until the end of the tick');
    const order = await done;
    assert.equal(order.length, n);
    assert.ok(order.every((v, i) => v === i), 'resolved in request order');
    const { writes, queuedRequests } = c.stats;
    assert.equal(queuedRequests, 0);
    assert.ok(writes < n / 100, `${n} requests in ${writes} writes`);
    assert.equal(c.pendingRequests, 0);
    assert.deepEqual(await c.wind([1, 2, 3], id), [1, 2, 3]);
  } finally {
    await c.close();
  }
});

test('close() rejects every pending request with ConnectionClosed', async () => {
  const c = await Client.connect(server.address);
  const id = await c.createCloth({ width: 60, height: 60, solverIterations: 32 });
  const closeEvent = new Promise((resolve) => c.once('close', (err) => resolve(err)));
  const frames = c.frames();
  const pending = [];
  for (let k = 0; k < 20; k++) pending.push(c.step({ instances: [id] }));
  pending.push(c.get(id));
  assert.equal(c.pendingRequests, 21);
  await c.close();
  const results = await Promise.allSettled(pending);
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof ConnectionClosed, `got ${r.reason}`);
    assert.equal(r.reason.code, 'connection_closed');
  }
  assert.equal(await closeEvent, undefined);
  assert.equal(c.state, 'closed');
  assert.deepEqual(await frames.next(), { value: undefined, done: true });
  await assert.rejects(c.status(), ConnectionClosed);
  await assert.rejects(c.connect(), ConnectionClosed);
  await c.close(); // twice is fine

  // The server is fine and the instance is still there.
  const d = await Client.connect(server.address);
  assert.equal((await d.get(id)).width, 60);
  await d.destroy(id);
  await d.close();
});

test('end() waits for the pending replies, then closes', async () => {
  const c = await Client.connect(server.address);
  const status = c.status();
  const wind = c.wind([0, 0, 0]);
  await c.end();
  assert.equal((await status).ok, true);
  assert.deepEqual(await wind, [0, 0, 0]);
  assert.equal(c.state, 'closed');
});

test('line_too_long: the error reply (without id) rejects its request, then the server closes', async () => {
  const c = await Client.connect(server.address);
  const closed = new Promise((resolve) => c.once('close', resolve));
  const huge = c.request('status', { padding: 'x'.repeat(1100000) });
  const after = c.status();
  await assert.rejects(huge, (err) => err instanceof ClothdError && err.code === 'line_too_long');
  await assert.rejects(after, ConnectionClosed);
  await closed;
  assert.equal(c.state, 'closed');
});

test('a server that dies rejects pending requests with ConnectionClosed', async () => {
  const doomed = await startServer();
  const c = await Client.connect(doomed.address);
  const id = await c.createCloth({ width: 100, height: 100, solverIterations: 64 });
  const pending = [];
  for (let k = 0; k < 50; k++) pending.push(c.step({ instances: [id] }));
  await pending[0];
  const settled = Promise.allSettled(pending.slice(1)); // handlers before the kill
  const exit = await doomed.stop('SIGKILL');
  assert.equal(exit.signal, 'SIGKILL');
  const results = await settled;
  const rejected = results.filter((r) => r.status === 'rejected');
  assert.ok(rejected.length > 0, 'some steps were still pending');
  for (const r of rejected) assert.ok(r.reason instanceof ConnectionClosed, `got ${r.reason}`);
  await c.closed;
});

test('connecting to a closed port rejects with the socket error', async () => {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  await assert.rejects(Client.connect({ port }), (err) => err.code === 'ECONNREFUSED');
});

// ---- a fake server that sends what the test wants ----------------------------

function frameBytes(instance, frame, flat, { version = 1, flags = 0 } = {}) {
  const b = Buffer.alloc(40 + 4 * flat.length);
  b.set([0x89, 0x43, 0x4c, 0x46]);
  b.writeUInt16LE(version, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(b.length, 8);
  b.writeUInt32LE(instance, 12);
  b.writeBigUInt64LE(BigInt(frame), 16);
  b.writeDoubleLE(frame / 60, 24);
  b.writeUInt32LE(flat.length / 3, 32);
  flat.forEach((v, i) => b.writeFloatLE(v, 40 + 4 * i));
  return b;
}

/**
 * A server that answers each request line with `respond(request)` (a string
 * or Buffer; the answers to one chunk's lines are written together).
 * `onConnection(socket)` may pause the socket.
 */
async function fakeServer(respond, onConnection) {
  const srv = net.createServer((socket) => {
    let rest = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      const out = [];
      for (const line of lines) {
        const r = respond(JSON.parse(line));
        if (r !== undefined) out.push(Buffer.isBuffer(r) ? r : Buffer.from(r));
      }
      if (out.length) socket.write(Buffer.concat(out));
    });
    socket.on('error', () => {});
    if (onConnection) onConnection(socket);
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: srv.address().port, close: () => new Promise((resolve) => srv.close(resolve)) };
}

test('backpressure: while the server does not read, requests wait for drain, then all resolve in order', async () => {
  let resume;
  const fake = await fakeServer(
    (req) => `{"id":${req.id},"ok":true,"n":${req.n}}\n`,
    (socket) => {
      socket.pause(); // the kernel buffers fill up: socket.write() returns false
      resume = () => socket.resume();
    },
  );
  const c = await Client.connect({ port: fake.port, hello: false }); // a fake: no handshake
  try {
    const n = 20000;
    const padding = 'x'.repeat(1000); // 20 MB in all: more than the kernel buffers
    const order = [];
    const calls = [];
    for (let i = 0; i < n; i++) calls.push(c.request('echo', { n: i, padding }).then((r) => order.push(r.n)));
    // Wait until the client stops writing and queues.
    const t0 = Date.now();
    while (c.stats.drainWaits === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
    assert.ok(c.stats.drainWaits > 0, 'socket.write() reported a full buffer');
    assert.ok(c.stats.queuedRequests > 0, 'the rest waits in the client queue');
    resume();
    await Promise.all(calls);
    assert.equal(order.length, n);
    assert.ok(order.every((v, i) => v === i), 'resolved in request order');
    assert.equal(c.stats.queuedRequests, 0);
  } finally {
    await c.close();
    await fake.close();
  }
});

test('a reply whose id does not match fails loudly: ProtocolError, connection closed', async () => {
  const fake = await fakeServer((req) => `{"id":${req.id + 1},"ok":true}\n`);
  const c = await Client.connect({ port: fake.port, hello: false }); // a fake: no handshake
  const errors = [];
  c.on('error', (e) => errors.push(e));
  const closed = new Promise((resolve) => c.once('close', resolve));
  const first = c.status();
  const second = c.status();
  await assert.rejects(first, (err) => err instanceof ProtocolError && /expected id 1 \(status\), got id 2/.test(err.message));
  await assert.rejects(second, ProtocolError);
  const cause = await closed;
  assert.ok(cause instanceof ProtocolError);
  assert.equal(errors.length, 1);
  await fake.close();
});

test('frames at unaligned offsets are copied, aligned ones are views; unknown versions and flags are skipped; a bad length fails', async () => {
  const flat = [1.5, -2, 3, 0.1, 0.2, 0.3];
  const fake = await fakeServer((req) => {
    if (req.cmd === 'subscribe') {
      // One write: the reply (19 bytes: the first frame's payload starts at
      // offset 59, unaligned), a version-2 frame and a frame with flag bit 4
      // to skip, an event line padded so that the last frame's payload is
      // 4-byte aligned.
      const reply = Buffer.from(`{"id":${req.id},"ok":true}\n`);
      const before = reply.length + 3 * 64;
      const padding = ' '.repeat((4 - ((before + 14) % 4)) % 4);
      const event = Buffer.from(`{"event":"x"${padding}}\n`);
      return Buffer.concat([reply, frameBytes(1, 0, flat), frameBytes(1, 9, flat, { version: 2 }),
        frameBytes(1, 10, flat, { flags: 16 }), event, frameBytes(1, 1, flat)]);
    }
    if (req.cmd === 'bad') {
      const bad = frameBytes(1, 2, flat);
      bad.writeUInt32LE(3, 32); // 3 particles in a 2-particle frame
      return Buffer.concat([Buffer.from(`{"id":${req.id},"ok":true}\n`), bad]);
    }
    return `{"id":${req.id},"ok":true}\n`;
  });
  const c = await Client.connect({ port: fake.port, hello: false }); // a fake: no handshake
  const warnings = [];
  c.on('warning', (w) => warnings.push(w.message));
  const events = [];
  c.on('event', (e) => events.push(e));
  const frames = c.frames();
  await c.subscribe();
  const [f0, f1] = [(await frames.next()).value, (await frames.next()).value];
  assert.deepEqual([f0.frame, f1.frame], [0, 1]);
  for (const f of [f0, f1]) assert.deepEqual(Array.from(f.positions), Array.from(Float32Array.from(flat)));
  // (One 300-byte write arrives as one chunk on loopback.)
  assert.equal(f0.view, false, 'unaligned payload: copied');
  assert.equal(f1.view, true, 'aligned payload: a view on the received chunk');
  assert.equal(f1.positions.byteOffset % 4, 0);
  assert.deepEqual(warnings, ['frame: skipped a frame of version 2', 'frame: skipped a frame of unknown flags 0x0010']);
  assert.equal(c.stats.skippedFrames, 2);
  assert.equal(events.length, 1);

  const closed = new Promise((resolve) => c.once('close', resolve));
  await c.request('bad'); // its reply comes before the bad frame
  const cause = await closed;
  assert.ok(cause instanceof ProtocolError);
  assert.match(cause.message, /length 64 does not match 3 particles/);
  await assert.rejects(frames.next(), ProtocolError);
  await assert.rejects(c.status(), ConnectionClosed);
  await fake.close();
});

test('the server exits with code 0 on SIGTERM', async () => {
  const { code, signal } = await server.stop('SIGTERM');
  assert.equal(signal, null);
  assert.equal(code, 0, `stderr: ${server.stderr}`);
  server = null;
});
