'use strict';
// Every command through the real server: round trips, physics through the
// wire, each error code, pipelined ids, events.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { Client, ClothdError } = require('..');
const { startServer } = require('../test-support/server.js');

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

function isError(code, messagePattern) {
  return (err) => {
    assert.ok(err instanceof ClothdError, `a ClothdError, got ${err && err.stack}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    if (messagePattern) assert.match(err.message, messagePattern);
    assert.equal(err.reply.ok, false);
    return true;
  };
}

test('create then get returns the exact initial grid', async () => {
  const spacing = 0.25;
  const origin = [1, 2, -3];
  const id = await client.createCloth({ width: 4, height: 3, spacing, origin });
  const s = await client.get(id);
  assert.equal(s.instance, id);
  assert.equal(s.type, 'cloth');
  assert.equal(s.width, 4);
  assert.equal(s.height, 3);
  assert.equal(s.frame, 0);
  assert.equal(s.time, 0);
  assert.equal(s.enabled, true);
  assert.equal(s.unstable, false);
  assert.deepEqual(s.pinned, []);
  assert.deepEqual(s.colliders, []);
  assert.equal(s.selfCollision, null); // selfDistance 0
  assert.ok(s.positions instanceof Float32Array);
  assert.equal(s.positions.length, 3 * 12);
  for (let y = 0; y < 3; y++) {
    for (let x = 0; x < 4; x++) {
      const i = y * 4 + x;
      // right [1,0,0], down [0,-1,0]: origin + x·spacing·right + y·spacing·down.
      assert.deepEqual(Array.from(s.positions.subarray(3 * i, 3 * i + 3)), [1 + spacing * x, 2 - spacing * y, -3], `particle ${i}`);
    }
  }

  // Other axes: right along z, down along x.
  const id2 = await client.createCloth({ width: 2, height: 2, spacing: 0.5, origin: [0, 1, 0], right: [0, 0, 2], down: [3, 0, 0] });
  const s2 = await client.get(id2);
  assert.deepEqual(Array.from(s2.positions), [0, 1, 0, 0, 1, 0.5, 0.5, 1, 0, 0.5, 1, 0.5]);

  // With self-collision on, get reports its work: one search per step for a still cloth.
  const id3 = await client.createCloth({ width: 4, height: 4, selfDistance: 0.08, gravity: [0, 0, 0] });
  await client.step({ instances: [id3] });
  await client.step({ instances: [id3] });
  assert.deepEqual((await client.get(id3)).selfCollision, { searches: 2, pairs: 0, overflows: 0 });
  await client.destroy(id3);

  // The raw reply of create: 10 x 10 has 502 constraints (both shear diagonals).
  const reply = await client.request('create', { width: 10, height: 10 });
  assert.equal(reply.particles, 100);
  assert.equal(reply.constraints, 502);
  assert.equal(reply.ok, true);
  for (const i of [id, id2, reply.instance]) await client.destroy(i);
});

test('a free cloth falls y0 - g t²/2 through the server (damping 0, 30 steps of 1/60)', async () => {
  const y0 = 10;
  const id = await client.createCloth({ width: 3, height: 3, spacing: 0.5, origin: [0, y0, 0], damping: 0 });
  const start = await client.get(id);
  for (let i = 0; i < 30; i++) {
    const r = await client.step({ dt: 1 / 60, instances: [id] });
    assert.equal(r.stepped, 1);
    assert.deepEqual(r.unstable, []);
  }
  const s = await client.get(id);
  assert.equal(s.frame, 30);
  assert.ok(Math.abs(s.time - 0.5) < 1e-6, `time ${s.time}`);
  const drop = 0.5 * 9.81 * s.time * s.time;
  for (let i = 0; i < 9; i++) {
    const [x, y, z] = s.positions.subarray(3 * i, 3 * i + 3);
    const [x0, yStart, z0] = start.positions.subarray(3 * i, 3 * i + 3);
    assert.ok(Math.abs(y - (yStart - drop)) < 1e-3, `particle ${i}: y ${y}, expected ${yStart - drop}`);
    // Sideways within 0.1 mm: under the default small steps (6 substeps) the
    // passes' roundings leave a free cloth drifting ~0.06 mm in 0.5 s
    // (PROTOCOL.md, "Small steps by default").
    assert.ok(Math.abs(x - x0) < 1e-4 && Math.abs(z - z0) < 1e-4, `particle ${i} moved sideways`);
  }
  await client.destroy(id);
});

test('every error code comes back with the server message, and the connection stays usable', async () => {
  // parse_error: raw lines that are not JSON objects.
  let r = await client.rawRequest('{"cmd":');
  assert.equal(r.ok, false);
  assert.equal(r.error.code, 'parse_error');
  assert.equal('id' in r, false);
  r = await client.rawRequest('[1,2]');
  assert.equal(r.error.code, 'parse_error');
  assert.equal(r.error.message, 'the request must be a JSON object');
  // A raw line keeps its own id.
  r = await client.rawRequest('{"id":"abc","cmd":"jump"}');
  assert.equal(r.id, 'abc');
  assert.equal(r.error.code, 'unknown_command');
  assert.equal((await client.status()).ok, true);

  await assert.rejects(client.request('jump'), isError('unknown_command', /^unknown command "jump" \(hello lists the commands\)$/));
  await assert.rejects(client.createCloth({ width: 1 }), isError('invalid_argument', /^width: must be an integer >= 2$/));
  await assert.rejects(client.createCloth({ stiffness: 1.5 }), isError('invalid_argument', /^stiffness: /));
  await assert.rejects(client.createCloth({ origin: [0, 1] }), isError('invalid_argument', /^origin: /));
  await assert.rejects(client.request('get'), isError('invalid_argument', /^instance: required$/));
  await assert.rejects(client.request('destroy'), isError('invalid_argument', /^instance: required \(or "instances", or "scene" for all of a scene\)$/));
  await assert.rejects(client.get(4242), isError('not_found', /^instance: no instance 4242$/));
  await assert.rejects(
    client.createCloth({ width: 2000, height: 2000 }),
    isError('limit_exceeded', /^width, height: 4000000 particles exceed the limit of \d+$/),
  );
  const id = await client.createCloth({ width: 2, height: 2 });
  await assert.rejects(client.pin(id, 200), isError('invalid_argument', /^particle: index 200 out of range \(4 particles\)$/));
  await assert.rejects(client.pin(id, [0, 1, 9]), isError('invalid_argument', /^particles\[2\]: /));
  await assert.rejects(client.moveCollider(id, 9, { position: [0, 0, 0] }), isError('not_found', /^collider: no collider 9 on instance /));
  await assert.rejects(client.step({ dt: 0 }), isError('invalid_argument', /^dt: /));

  // Still usable.
  const s = await client.get(id);
  assert.equal(s.positions.length, 12);
  await client.destroy(id);
  await assert.rejects(client.get(id), isError('not_found'));
});

test('100 pipelined requests each get their own reply', async () => {
  const id = await client.createCloth({ width: 2, height: 2 });
  const calls = [];
  for (let i = 0; i < 100; i++) calls.push(i % 10 === 9 ? client.get(0xdead0 + i) : client.wind([i, 2 * i, 0.5], id));
  assert.ok(client.pendingRequests >= 1);
  const results = await Promise.allSettled(calls);
  results.forEach((r, i) => {
    if (i % 10 === 9) {
      assert.equal(r.status, 'rejected', `request ${i}`);
      assert.equal(r.reason.code, 'not_found');
      assert.equal(r.reason.message, `instance: no instance ${0xdead0 + i}`);
    } else {
      assert.equal(r.status, 'fulfilled', `request ${i}: ${r.reason}`);
      assert.deepEqual(r.value, [i, 2 * i, 0.5], `request ${i}`);
    }
  });
  assert.equal(client.pendingRequests, 0);
  await client.destroy(id);
});

test('pin, unpin, colliders, gravity, enable and destroy', async () => {
  const id = await client.createCloth({ width: 3, height: 3, spacing: 0.5, origin: [0, 2, 0] });
  assert.equal(await client.pin(id, [0, 2], { positions: [[0, 3, 0], new Float32Array([1, 3, 0.5])] }), 2);
  assert.equal(await client.pin(id, 4), 1); // in place
  let s = await client.get(id);
  assert.deepEqual(s.pinned, [0, 2, 4]);
  assert.deepEqual(Array.from(s.positions.subarray(0, 3)), [0, 3, 0]);
  assert.deepEqual(Array.from(s.positions.subarray(6, 9)), [1, 3, 0.5]);
  assert.equal(await client.unpin(id, 4), 1);
  assert.equal(await client.unpin(id, [0]), 1);
  assert.deepEqual((await client.get(id)).pinned, [2]);

  const c = await client.addCollider(id, { type: 'sphere', position: [0, 0.5, 0], radius: 0.3 });
  const p = await client.addCollider(id, { type: 'plane', position: [0, -1, 0] });
  s = await client.get(id);
  assert.deepEqual(s.colliders.map((x) => [x.collider, x.type]), [[c, 'sphere'], [p, 'plane']]);
  assert.equal(Math.fround(s.colliders[0].radius), Math.fround(0.3)); // float32 0.3, printed with 9 digits
  await client.moveCollider(id, c, { position: [0, 0.25, 0] });
  s = await client.get(id);
  assert.deepEqual(s.colliders[0].position, [0, 0.25, 0]);
  await client.removeCollider(id, c);
  await assert.rejects(client.removeCollider(id, c), isError('not_found'));
  await assert.rejects(client.addCollider(id, { type: 'cone' }), isError('invalid_argument', /^type: unknown collider type "cone" \(one of "sphere", "capsule", "plane", "taperedCapsule" or "box"\)$/));
  const limb = await client.addTaperedCapsule(id, [0, 1, 0], [0, 0.4, 0], 0.1, 0.05, { friction: 0.2 });
  const torso = await client.addCollider(id, { type: 'box', position: [0, 2, 0], halfExtents: [0.2, 0.3, 0.1], rotation: [0, 0, 0, 1] });
  await client.moveCollider(id, torso, { rotation: [0, 0.7071068, 0, 0.7071068] });
  s = await client.get(id);
  const [tc, bx] = [limb, torso].map((k) => s.colliders.find((x) => x.collider === k));
  assert.equal(tc.type, 'taperedCapsule');
  assert.equal(Math.fround(tc.radius2), Math.fround(0.05));
  assert.equal(Math.fround(tc.height), Math.fround(0.75));
  assert.deepEqual(tc.normal, [0, -1, 0]);
  assert.equal(bx.type, 'box');
  assert.deepEqual(bx.halfExtents.map(Math.fround), [0.2, 0.3, 0.1].map(Math.fround));
  assert.ok(Math.abs(bx.rotation[1] - 0.7071068) < 1e-6 && Math.abs(bx.rotation[3] - 0.7071068) < 1e-6);
  await assert.rejects(client.moveCollider(id, limb, { rotation: [0, 0, 0, 1] }),
    isError('invalid_argument', /^rotation: collider \d+ is a taperedCapsule, which turns by "normal"$/));
  await assert.rejects(client.addCollider(id, { type: 'box', rotation: [0, 0, 0, 2] }),
    isError('invalid_argument', /^rotation: must be a unit quaternion \(length within 0\.001 of 1, not 2\)$/));
  await client.removeCollider(id, limb);
  await client.removeCollider(id, torso);

  await client.gravity(id, [0, 0, 0]);
  assert.deepEqual(await client.wind([0.1, 0, 0], id), [0.100000001, 0, 0]);
  await client.wind([0, 0, 0], id);
  assert.equal(await client.enable(id, false), false);
  const r = await client.step({ instances: [id] });
  assert.equal(r.stepped, 0);
  assert.equal((await client.get(id)).frame, 0);
  assert.equal(await client.enable(id), true);
  assert.equal((await client.step({ instance: id })).stepped, 1);
  assert.equal((await client.step(1 / 30)).stepped >= 1, true); // a number is dt

  const st = await client.status();
  const mine = st.instances.find((x) => x.instance === id);
  assert.equal(mine.particles, 9);
  assert.equal(mine.colliders, 1);
  assert.equal(mine.frame, 2);
  assert.match(st.text, /^=== Cloth Simulation ===\n/);
  assert.equal(st.version, '0.1.0');

  await client.destroy(id);
  await assert.rejects(client.get(id), isError('not_found', new RegExp(`^instance: no instance ${id}$`)));
  await assert.rejects(client.destroy(id), isError('not_found'));
});

test('the global wind is echoed and pushes every instance (windModel "constant": an acceleration)', async () => {
  const id = await client.createCloth({ width: 2, height: 2, gravity: [0, 0, 0], damping: 0, windModel: 'constant' });
  assert.deepEqual(await client.wind([0, 0, 1.5]), [0, 0, 1.5]);
  assert.deepEqual(await client.globalWind(), [0, 0, 1.5]);
  for (let i = 0; i < 10; i++) await client.step({ dt: 0.1, instances: [id] });
  const s = await client.get(id);
  // a = 1.5 m/s² along z for 1 s: z = a t² / 2 = 0.75 for every particle.
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(s.positions[3 * i + 2] - 0.75) < 1e-4, `particle ${i}: z ${s.positions[3 * i + 2]}`);
  assert.deepEqual(await client.wind([0, 0, 0]), [0, 0, 0]);
  await client.destroy(id);
});

test('set changes a live instance, not its layout', async () => {
  const id = await client.createCloth({ width: 3, height: 3, stretchCompliance: 0, substeps: 2, tethers: false });
  await client.set(id, { stiffness: 0.5, substeps: 4, gravity: new Float32Array([0, -1, 0]), sleepThreshold: 0 });
  await assert.rejects(client.set(id, { width: 5 }), isError('invalid_argument', /^width: fixed at creation$/));
  await assert.rejects(
    client.set(id, { stiffness: 0.5, stretchCompliance: 0 }),
    isError('invalid_argument', /^stretchCompliance: give either stiffness or stretchCompliance, not both$/),
  );
  await assert.rejects(client.set(id, { windModel: 'breeze' }), isError('invalid_argument', /^windModel: /));
  const r = await client.step({ instances: [id] });
  assert.equal(r.stepped, 1);
  assert.deepEqual(r.sleeping, []);
  assert.deepEqual(r.impulses, []);
  const s = await client.get(id);
  assert.equal(s.sleeping, false);
  await client.destroy(id);
});

test('transform and attach: attached particles follow the transform', async () => {
  const id = await client.createCloth({ width: 4, height: 3, spacing: 0.25, origin: [-0.375, 2, 0] });
  await client.transform(id, 'shoulders', [0, 2, 0]);
  assert.equal(await client.attach(id, 'shoulders', [0, 3], { offsets: [[-0.5, 0, 0], [0.5, 0, 0]] }), 2);
  assert.equal(await client.attach(id, 'shoulders', 1), 1); // where it is
  await assert.rejects(client.attach(id, 'hips', 2), isError('not_found'));
  assert.deepEqual((await client.get(id)).pinned, [0, 1, 3]);

  // Move and turn the transform: 90° about y takes the local x axis to -z.
  const h = Math.SQRT1_2;
  await client.transform(id, 'shoulders', [1, 3, 0], [0, h, 0, h]);
  await client.step({ instances: [id] }); // pins travel there over the step
  const s = await client.get(id);
  const near = (i, want) => {
    const got = Array.from(s.positions.subarray(3 * i, 3 * i + 3));
    for (let k = 0; k < 3; k++) assert.ok(Math.abs(got[k] - want[k]) < 1e-5, `particle ${i}: ${got} vs ${want}`);
  };
  near(0, [1, 3, 0.5]);
  near(3, [1, 3, -0.5]);
  near(1, [1, 3, 0.125]); // its offset was (-0.125, 0, 0)
  assert.equal(await client.unpin(id, 0), 1);
  await client.destroy(id);
});

test('a coupled collider reports impulses in the step reply', async () => {
  const id = await client.createCloth({ width: 5, height: 5, spacing: 0.1, origin: [-0.2, 0.05, -0.2], right: [1, 0, 0], down: [0, 0, 1] });
  const plane = await client.addCollider(id, { type: 'plane', position: [0, 0, 0], coupling: 1, friction: 0.5, staticFriction: 0.6 });
  const sphere = await client.addCollider(id, { type: 'sphere', position: [5, 5, 5], radius: 0.1 });
  // One entry per coupled collider every step; non-zero once the cloth lands (~6 steps).
  let imp;
  for (let i = 0; i < 30; i++) {
    const { impulses } = await client.step({ instances: [id] });
    assert.equal(impulses.length, 1, 'one entry: the coupled collider');
    [imp] = impulses;
    assert.equal(imp.instance, id);
    assert.equal(imp.collider, plane);
    assert.equal(imp.linear.length, 3);
    assert.equal(imp.angular.length, 3);
    if (imp.linear[1] !== 0) break;
  }
  assert.ok(imp.linear[1] < 0, `the landing cloth pushes the floor down: ${imp.linear}`);
  const s = await client.get(id);
  assert.deepEqual(s.colliders.map((c) => c.collider), [plane, sphere]);
  await client.destroy(id);
});

test('debug: the flag, and the event on another subscribed connection', async () => {
  const viewer = await Client.connect(server.address);
  try {
    await viewer.subscribe(); // every instance: a viewer
    const event = new Promise((resolve) => viewer.once('event', resolve));
    assert.equal(await client.debug(true), true);
    assert.deepEqual(await event, { event: 'debug', enabled: true });
    assert.equal(await viewer.debug(), true);
    assert.equal((await client.status()).debug, true);
    assert.equal(await client.debug(false), false);
    assert.equal(viewer.stats.events >= 1, true);
  } finally {
    await viewer.close();
  }
});

test('step with budgetMs reports the plan and steps the lowest priority coarser', async () => {
  const low = await client.createCloth({ width: 12, height: 12, solverIterations: 8, sleepThreshold: 0, priority: 0 });
  const high = await client.createCloth({ width: 12, height: 12, solverIterations: 8, sleepThreshold: 0, priority: 1, lod: 0 });
  const plain = await client.step({ instances: [low, high] });
  assert.equal(plain.degraded, undefined, 'no budget, no budget members');
  const roomy = await client.step({ instances: [low, high], budgetMs: 60000 });
  assert.deepEqual(roomy.degraded, []);
  assert.equal(roomy.budgetMs, 60000);
  assert.ok(roomy.predictedMs > 0 && roomy.actualMs > 0);
  const tight = await client.step({ instances: [low, high], budgetMs: 0.0001 });
  assert.deepEqual(tight.degraded, [{ instance: low, lod: 2 }, { instance: high, lod: 2 }]);
  const lowered = await client.get(low);
  assert.deepEqual([lowered.lod, lowered.currentLod, lowered.degraded, lowered.priority], [0, 2, true, 0]);
  await client.set(high, { lod: 3 });
  const own = await client.step({ instances: [low, high], budgetMs: 0.0001 });
  assert.deepEqual(own.degraded, [{ instance: low, lod: 2 }], 'its own level 3 is not degraded');
  const coarse = await client.get(high);
  assert.deepEqual([coarse.lod, coarse.currentLod, coarse.degraded, coarse.priority], [3, 3, false, 1]);
  await client.destroy(low);
  await client.destroy(high);
});

test('serverStats (the stats command) counts the steps, requests and errors this client caused', async () => {
  const before = await client.serverStats();
  const id = await client.createCloth({ width: 3, height: 3 });
  for (let i = 0; i < 5; i++) await client.step({ instances: [id] });
  await assert.rejects(client.get(id + 1000), isError('not_found'));
  const after = await client.serverStats();
  assert.equal(after.ok, true);
  assert.equal(after.steps.total - before.steps.total, 5);
  assert.equal(after.requests.step - before.requests.step, 5);
  assert.equal(after.requests.stats - before.requests.stats, 1);
  assert.equal(after.errors.not_found - before.errors.not_found, 1);
  assert.equal(after.steps.durationSeconds.counts.length, after.steps.durationSeconds.bounds.length + 1);
  assert.ok(after.instances.awake >= 1);
  assert.equal(typeof after.simd, 'string');
  await client.destroy(id);
});

test('the server exits with code 0 on SIGTERM', async () => {
  await client.close();
  client = null;
  const { code, signal } = await server.stop('SIGTERM');
  assert.equal(signal, null);
  assert.equal(code, 0, `stderr: ${server.stderr}`);
  server = null;
});
