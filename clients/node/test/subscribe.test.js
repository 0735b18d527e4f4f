'use strict';
// Frames from the real server: order, bit-exactness against get, the async
// iterator, the 'frame' event, quantized frames, decimation and the
// velocity and normal channels.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { Client } = require('..');
const { startServer } = require('../test-support/server.js');
const { bytesOf, take } = require('../test-support/frames.js');

let server;
let client;

before(async () => {
  server = await startServer();
  client = await Client.connect(server.address);
});

after(async () => {
  if (client) await client.close();
  if (server) await server.stop('SIGKILL').catch(() => {});
});

async function curtain(c, width = 6, height = 5) {
  const id = await c.createCloth({ width, height, spacing: 0.1, origin: [0, 2, 0] });
  await c.pin(id, Array.from({ length: width }, (_, i) => i));
  return id;
}

test('subscribe: frames 0..5 in order, bitwise equal to get', async () => {
  const id = await curtain(client);
  const frames = client.frames({ instance: id });
  const viaEvents = [];
  const onFrame = (f) => {
    if (f.instance === id) viaEvents.push(f);
  };
  client.on('frame', onFrame);
  const reply = await client.subscribe({ instance: id });
  assert.deepEqual(reply.instances, [id]);

  const states = [await client.get(id)];
  for (let k = 1; k <= 5; k++) {
    await client.step({ dt: 1 / 60, instances: [id] });
    states.push(await client.get(id));
  }
  const got = await take(frames, 6);
  client.off('frame', onFrame);

  assert.deepEqual(got.map((f) => f.frame), [0, 1, 2, 3, 4, 5]);
  for (const [k, f] of got.entries()) {
    assert.equal(f.instance, id);
    assert.equal(f.quantized, false);
    assert.equal(f.count, 30);
    assert.ok(f.positions instanceof Float32Array);
    assert.equal(f.frame, states[k].frame);
    assert.ok(Math.abs(f.time - states[k].time) < 1e-9, `frame ${k}: time ${f.time} vs ${states[k].time}`);
    assert.ok(bytesOf(f.positions).equals(bytesOf(states[k].positions)), `frame ${k}: positions bitwise equal to get`);
  }
  assert.ok(!bytesOf(got[5].positions).equals(bytesOf(got[0].positions)), 'the cloth moved between frames 0 and 5');
  assert.deepEqual(viaEvents.map((f) => f.frame), [0, 1, 2, 3, 4, 5], "the 'frame' event saw the same frames");
  assert.equal(frames.dropped, 0);
  await frames.return();
  await client.unsubscribe({ instance: id });
  await client.destroy(id);
});

test('the async iterator: break stops it, a slow consumer keeps the newest frames, close ends it', async () => {
  const c = await Client.connect(server.address);
  const id = await curtain(c, 3, 3);
  const small = c.frames({ maxQueue: 2, instance: id });
  const all = c.frames();
  await c.subscribe({ instance: id });
  for (let k = 0; k < 5; k++) await c.step({ instances: [id] });
  await c.get(id); // after the last step's frame

  // Nobody read `small` while 6 frames came: the newest 2 are kept.
  assert.equal(small.queued, 2);
  assert.equal(small.dropped, 4);
  assert.deepEqual((await take(small, 2)).map((f) => f.frame), [4, 5]);

  let seen = 0;
  for await (const f of all) {
    assert.equal(f.frame, seen);
    if (++seen === 3) break; // return(): detached
  }
  assert.equal(seen, 3);
  assert.deepEqual(await all.next(), { value: undefined, done: true });

  const waiting = small.next(); // pending when the connection closes
  await c.close();
  assert.deepEqual(await waiting, { value: undefined, done: true });
  assert.deepEqual(await c.frames().next(), { value: undefined, done: true }, 'a closed client yields nothing');
});

test('an AbortSignal ends frames()', async () => {
  const ac = new AbortController();
  const it = client.frames({ signal: ac.signal });
  const pending = it.next();
  ac.abort(new Error('enough'));
  await assert.rejects(pending, /enough/);
  assert.deepEqual(await it.next(), { value: undefined, done: true });
});

test('subscribing to all sends frame 0 of an instance created later', async () => {
  const c = await Client.connect(server.address);
  try {
    const frames = c.frames();
    const reply = await c.subscribe();
    assert.equal(reply.all, true);
    const id = await c.createCloth({ width: 2, height: 2 });
    let f;
    do [f] = await take(frames, 1);
    while (f.instance !== id);
    assert.equal(f.frame, 0);
    assert.equal(f.count, 4);
    await c.unsubscribe();
    await c.destroy(id);
  } finally {
    await c.close();
  }
});

// Quantized frames and "every" came with issue 5: an older server ignores
// both (unknown members are ignored), which is detected and reported as a skip.
async function frameOptionsSupported() {
  const c = await Client.connect(server.address);
  try {
    const id = await c.createCloth({ width: 2, height: 2 });
    const it = c.frames({ instance: id });
    await c.subscribe({ instance: id, quantize: true });
    const [f] = await take(it, 1);
    await c.destroy(id);
    return f.quantized;
  } finally {
    await c.close();
  }
}

test('quantize: frames decode to within half a quantization step of get', async (t) => {
  if (!(await frameOptionsSupported())) {
    t.skip('this clothd ignores "quantize" (sent plain frames): built before issue 5');
    return;
  }
  const id = await curtain(client, 8, 6);
  const frames = client.frames({ instance: id });
  await client.subscribe({ instance: id, quantize: true });
  const states = [await client.get(id)];
  for (let k = 1; k <= 3; k++) {
    await client.step({ instances: [id] });
    states.push(await client.get(id));
  }
  const got = await take(frames, 4);
  assert.deepEqual(got.map((f) => f.frame), [0, 1, 2, 3]);
  for (const [k, f] of got.entries()) {
    assert.equal(f.quantized, true);
    assert.equal(f.flags & 1, 1);
    assert.equal(f.count, 48);
    const p = states[k].positions;
    for (let a = 0; a < 3; a++) {
      const axis = p.filter((_, i) => i % 3 === a);
      assert.equal(f.bounds.min[a], Math.min(...axis), `frame ${k} axis ${a}: bbox min`);
      assert.equal(f.bounds.max[a], Math.max(...axis), `frame ${k} axis ${a}: bbox max`);
    }
    for (let i = 0; i < p.length; i++) {
      const a = i % 3;
      const tol = (f.bounds.max[a] - f.bounds.min[a]) / 65535 / 2 + 1e-6;
      assert.ok(Math.abs(f.positions[i] - p[i]) <= tol, `frame ${k} coordinate ${i}: ${f.positions[i]} vs ${p[i]}`);
    }
  }
  await frames.return();
  await client.unsubscribe({ instance: id });
  await client.destroy(id);
});

test('every: only frames whose number is a multiple of k (plus the current one)', async (t) => {
  if (!(await frameOptionsSupported())) {
    t.skip('this clothd ignores "every": built before issue 5');
    return;
  }
  const id = await curtain(client, 3, 3);
  await client.step({ instances: [id] }); // frame 1 now
  const frames = client.frames({ instance: id });
  await client.subscribe({ instance: id, every: 3 });
  for (let k = 0; k < 7; k++) await client.step({ instances: [id] }); // frames 2..8
  await client.get(id);
  const got = await take(frames, 3);
  assert.deepEqual(got.map((f) => f.frame), [1, 3, 6]);
  assert.equal(frames.queued, 0);
  await frames.return();
  await client.unsubscribe({ instance: id });
  await client.destroy(id);
});

test('channels: velocities and normals in frames equal get\'s, plain and quantized', async () => {
  // A sheet lying flat (down +z) swings down from its pinned top edge.
  const id = await client.createCloth({
    width: 8, height: 6, spacing: 0.05, origin: [0, 2, 0], down: [0, 0, 1], windModel: 'constant', sleepThreshold: 0,
  });
  await client.pin(id, Array.from({ length: 8 }, (_, i) => i));
  const first = await client.get(id, { velocities: true, normals: true });
  assert.ok(first.velocities.every((v) => v === 0), 'no velocity before the first step');
  for (let i = 0; i < 48; i++) assert.deepEqual(Array.from(first.normals.subarray(3 * i, 3 * i + 3)), [0, 1, 0]);
  assert.equal((await client.get(id)).velocities, null, 'not asked for: null');

  const full = await Client.connect(server.address);
  const quant = await Client.connect(server.address);
  try {
    const fi = full.frames({ instance: id });
    const qi = quant.frames({ instance: id });
    await full.subscribe({ instance: id, channels: ['velocities', 'normals'] });
    await quant.subscribe({ instance: id, quantize: true, channels: ['normals', 'velocities'] });
    await take(fi, 1);
    await take(qi, 1);
    let slowest = 0;
    for (let step = 1; step <= 5; step++) {
      await client.step({ dt: 1 / 60, instances: [id] });
      const [f] = await take(fi, 1);
      const [q] = await take(qi, 1);
      const state = await client.get(id, { velocities: true, normals: true });
      assert.equal(f.frame, step);
      assert.equal(f.flags, 6);
      assert.equal(q.flags, 7);
      assert.ok(bytesOf(f.velocities).equals(bytesOf(state.velocities)), 'velocities bit for bit');
      assert.ok(bytesOf(f.normals).equals(bytesOf(state.normals)), 'normals bit for bit');
      slowest = Math.min(slowest, ...state.velocities);
      for (let i = 0; i < state.velocities.length; i++) {
        const k = i % 3;
        const tol = (q.velocityBounds.max[k] - q.velocityBounds.min[k]) / 65535 / 2 + 1e-6;
        assert.ok(Math.abs(q.velocities[i] - state.velocities[i]) <= tol, `velocity ${i}`);
        assert.ok(Math.abs(q.normals[i] - state.normals[i]) <= 1e-4, `normal ${i}`);
      }
    }
    assert.ok(slowest < -0.3, `it swings down (${slowest} m/s)`);
  } finally {
    await full.close();
    await quant.close();
  }
});

test('channels: an unknown one is invalid_argument listing the valid ones', async () => {
  await assert.rejects(client.subscribe({ channels: ['positions', 'speed'] }), (e) => {
    assert.equal(e.code, 'invalid_argument');
    assert.equal(e.message, 'channels[1]: unknown channel "speed" (one of "positions", "velocities" or "normals")');
    return true;
  });
});

test('the server exits with code 0 on SIGTERM', async () => {
  await client.close();
  client = null;
  const { code, signal } = await server.stop('SIGTERM');
  assert.equal(signal, null);
  assert.equal(code, 0, `stderr: ${server.stderr}`);
  server = null;
});
