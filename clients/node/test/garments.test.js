'use strict';
// Garments (issue 14) through the Node client: the binary encoder against
// PROTOCOL.md's vectors B1 and B2 byte for byte, then against the real
// server a mesh cloth, painted properties in create and set and back in
// topology, skin in both forms (the same positions after the same steps),
// bulk pins, teleport, the inertia frame, and their error replies.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');

const { Client, ClothdError, encodeBinaryRequest } = require('..');
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

function isError(code, message) {
  return (err) => {
    assert.ok(err instanceof ClothdError, `a ClothdError, got ${err && err.stack}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    if (message !== undefined) assert.equal(err.message, message);
    return true;
  };
}

// PROTOCOL.md's vectors, spelled as there (one row per line).
const VECTOR_B1 = Buffer.from(
  [
    '89434c52', '0100', '0100', '50000000', '03000000', '01000000', '07000000', '02000000', '00000000',
    '000000000000803f00000000', 'cdcccc3d0000803f00000000',
    '00000000000000000000803f', '00000000000000000000803f',
  ].join(''),
  'hex',
);
const VECTOR_B2 = Buffer.from(
  '89434c5201000000300000000300000002000000080000000100000000000000' + '050000000000000000000040' + '00000000',
  'hex',
);

test('the binary encoder reproduces vectors B1 and B2 byte for byte', () => {
  const b1 = encodeBinaryRequest(1, 3, 7, 2, 1, [
    Float32Array.from([0, 1, 0, 0.1, 1, 0]),
    Float32Array.from([0, 0, 1, 0, 0, 1]),
  ]);
  assert.equal(b1.toString('hex'), VECTOR_B1.toString('hex'));
  const b2 = encodeBinaryRequest(2, 3, 8, 1, 0, [Uint32Array.from([5]), Float32Array.from([0, 2, 0])]);
  assert.equal(b2.toString('hex'), VECTOR_B2.toString('hex'));
});

test('skin() and pinBulk() put exactly the vectors on the wire', async () => {
  // A fake server that records what comes and answers each binary request.
  const got = [];
  const fake = net.createServer((sock) => {
    let buf = Buffer.alloc(0);
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 12 && buf.length >= buf.readUInt32LE(8)) {
        const n = buf.readUInt32LE(8);
        got.push(buf.subarray(0, n));
        sock.write(`{"id":${buf.readUInt32LE(20)},"ok":true,"pinned":1}\n`);
        buf = buf.subarray(n);
      }
    });
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const c = await Client.connect({ host: '127.0.0.1', port: fake.address().port, hello: false });
  try {
    await c.skin(3, [[0, 1, 0], [0.1, 1, 0]], [[0, 0, 1], [0, 0, 1]]);
    assert.equal(await c.pinBulk(3, [5], [[0, 2, 0]]), 1);
    // The client's own request ids (1, 2) where the vectors say 7 and 8.
    const want1 = Buffer.from(VECTOR_B1);
    want1.writeUInt32LE(1, 20);
    const want2 = Buffer.from(VECTOR_B2);
    want2.writeUInt32LE(2, 20);
    assert.equal(got[0].toString('hex'), want1.toString('hex'));
    assert.equal(got[1].toString('hex'), want2.toString('hex'));
  } finally {
    await c.close();
    fake.close();
  }
});

// A w x h rectangle in the xy plane triangulated like the grid.
function rectMesh(w, h, s = 0.1) {
  const verts = [];
  const uvs = [];
  const tris = [];
  for (let i = 0; i < w * h; i++) {
    verts.push([(i % w) * s, 1 - Math.floor(i / w) * s, 0]);
    uvs.push((i % w) / (w - 1), Math.floor(i / w) / (h - 1));
  }
  for (let y = 0; y < h - 1; y++) {
    for (let x = 0; x < w - 1; x++) {
      const tl = y * w + x;
      tris.push(tl, tl + w, tl + 1, tl + 1, tl + w, tl + w + 1);
    }
  }
  return { verts, uvs, tris };
}

test('a mesh cloth hands back its triangles and uvs', async () => {
  const { verts, uvs, tris } = rectMesh(4, 3);
  const id = await client.createMeshCloth(verts, tris, { uvs });
  const t = await client.topology(id);
  assert.equal(t.particles, 12);
  assert.deepEqual(Array.from(t.triangles), tris);
  assert.deepEqual(Array.from(t.uvs), Array.from(Float32Array.from(uvs)));
  assert.equal(t.skinned, false);
  assert.deepEqual(t.painted, {});
  const s = await client.get(id);
  assert.deepEqual(Array.from(s.positions), Array.from(Float32Array.from(verts.flat())));
  // Flat vertices (a Float32Array) are the same mesh; no uvs: none back.
  const flat = await client.createMeshCloth(Float32Array.from(verts.flat()), Uint32Array.from(tris));
  assert.equal((await client.topology(flat)).uvs, null);
  await client.destroy(id);
  await client.destroy(flat);
  await assert.rejects(client.createMeshCloth(verts, tris.slice(0, -1)),
    isError('invalid_argument', 'triangles: 35 indices is not a multiple of 3'));
  await assert.rejects(client.createMeshCloth(verts, tris, { width: 4 }),
    isError('invalid_argument', 'width: not used with "vertices" (a mesh cloth\'s vertices are its layout)'));
});

test('paint in create and set comes back in topology, and null clears it', async () => {
  const id = await client.createCloth({ width: 5, height: 4, backstopRadius: 0.25 });
  let t = await client.topology(id);
  assert.deepEqual(Array.from(t.painted.backstopRadius), new Array(20).fill(0.25));
  const reach = Array.from({ length: 20 }, (_, i) => (i < 5 ? 0 : 0.25));
  await client.set(id, { maxDistance: Float32Array.from(reach), invMassScale: 1, backstopRadius: null, linearInertia: 0.5 });
  t = await client.topology(id);
  assert.deepEqual(Array.from(t.painted.maxDistance), reach);
  assert.deepEqual(Array.from(t.painted.invMassScale), new Array(20).fill(1));
  assert.equal(t.painted.backstopRadius, undefined);
  await assert.rejects(client.set(id, { maxDistance: reach.slice(1) }),
    isError('invalid_argument', 'maxDistance: 19 values for 20 vertices (one per vertex, or one for all)'));
  await assert.rejects(client.set(id, { angularInertia: 2 }),
    isError('invalid_argument', 'angularInertia: must be a number in [0, 1]'));
  await client.destroy(id);
});

test('binary and JSON skins give the same positions after the same steps', async () => {
  const W = 6;
  const H = 5;
  const reach = Array.from({ length: W * H }, (_, i) => (i < W ? 0 : 0.02 * Math.floor(i / W)));
  const opts = { width: W, height: H, origin: [0, 1, 0], maxDistance: reach, backstopDistance: 0.005, backstopRadius: 0.3 };
  const a = await client.createCloth(opts);
  const b = await client.createCloth(opts);
  const base = (await client.get(a)).positions;
  const normals = new Array(W * H).fill([0, 0, 1]);
  let pose;
  for (let f = 1; f <= 8; f++) {
    pose = Float32Array.from(base, (v, k) => v + [0.01, 0.003, -0.02][k % 3] * f);
    await client.skin(a, pose, normals, { json: true });
    await client.skin(b, pose, normals); // binary
    await client.step({ instances: [a, b] });
  }
  const pa = (await client.get(a)).positions;
  const pb = (await client.get(b)).positions;
  assert.deepEqual(Array.from(pb), Array.from(pa));
  for (let i = 0; i < W * H; i++) {
    const d = Math.hypot(pa[3 * i] - pose[3 * i], pa[3 * i + 1] - pose[3 * i + 1], pa[3 * i + 2] - pose[3 * i + 2]);
    assert.ok(d <= reach[i] + 1e-4, `particle ${i}: ${d} from its skin, reach ${reach[i]}`);
  }
  assert.equal((await client.topology(b)).skinned, true);
  await client.destroy(a);
  await client.destroy(b);
});

test('skin errors come back with their codes, in both forms', async () => {
  const id = await client.createCloth({ width: 3, height: 2 });
  const pose = new Array(6).fill([0, 0, 0]);
  for (const json of [false, true]) {
    await assert.rejects(client.skin(id, pose.slice(0, 5), undefined, { json }),
      isError('invalid_argument', 'positions: 5 points for 6 vertices (one per vertex)'));
    await assert.rejects(client.skin(id, [...pose.slice(0, 5), [0, 3e5, 0]], undefined, { json }),
      isError('invalid_argument', 'positions[5]: outside the world box (|x|, |y|, |z| <= 100000 m)'));
    await assert.rejects(client.skin(999, pose, undefined, { json }), isError('not_found', 'instance: no instance 999'));
  }
  await assert.rejects(client.skin(id, [...pose.slice(0, 3), [0, NaN, 0], ...pose.slice(4)]),
    isError('invalid_argument', 'positions[3]: must be finite'));
  await assert.rejects(client.skin(id, pose, pose.slice(0, 2)), TypeError);
  await client.skin(id, pose, pose.map(() => [0, 0, 1])); // the connection goes on
  await client.destroy(id);
});

test('pinBulk pins at positions in one binary request', async () => {
  const id = await client.createCloth({ width: 4, height: 4 });
  assert.equal(await client.pinBulk(id, [0, 3], [[0, 1, 0], [0.5, 1, 0.25]]), 2);
  const s = await client.get(id);
  assert.deepEqual(s.pinned, [0, 3]);
  assert.deepEqual(Array.from(s.positions.subarray(9, 12)), [0.5, 1, 0.25]);
  await assert.rejects(client.pinBulk(id, [0, 99], [0, 1, 0, 0, 1, 0]),
    isError('invalid_argument', 'particles[1]: index 99 out of range (16 particles)'));
  await client.destroy(id);
});

test('teleport moves the instance rigidly, with no velocity', async () => {
  const id = await client.createCloth({ width: 3, height: 3, origin: [0, 1, 0], gravity: [0, 0, 0] });
  const before0 = (await client.get(id)).positions;
  const h = Math.SQRT1_2;
  await client.teleport(id, { translation: [10, 0, 0], rotation: [0, h, 0, h], pivot: [0, 1, 0] });
  const moved = (await client.get(id)).positions;
  for (let i = 0; i < 9; i++) {
    // A quarter turn about y maps (x, y, z) to (z, y, -x) about the pivot.
    assert.ok(Math.abs(moved[3 * i] - (before0[3 * i + 2] + 10)) < 1e-5);
    assert.ok(Math.abs(moved[3 * i + 1] - before0[3 * i + 1]) < 1e-5);
    assert.ok(Math.abs(moved[3 * i + 2] + before0[3 * i]) < 1e-5);
  }
  await client.step({ instance: id });
  const after1 = (await client.get(id)).positions;
  for (let k = 0; k < 27; k++) assert.ok(Math.abs(after1[k] - moved[k]) < 1e-5, 'no velocity from the teleport');
  await assert.rejects(client.teleport(id, { pivot: [2e5, 0, 0] }),
    isError('invalid_argument', 'pivot: outside the world box (|x|, |y|, |z| <= 100000 m)'));
  await assert.rejects(client.teleport(999), isError('not_found', 'instance: no instance 999'));
  await client.destroy(id);
});

test("a transform marked inertiaFrame carries the cloth by 1 - linearInertia of its move", async () => {
  async function drift(linearInertia) {
    const id = await client.createCloth({ width: 3, height: 3, origin: [0, 1, 0], gravity: [0, 0, 0], linearInertia });
    await client.transform(id, 'root', [0, 1, 0], undefined, { inertiaFrame: true });
    await client.step({ instance: id });
    await client.transform(id, 'root', [1, 1, 0]);
    await client.step({ instance: id });
    const x = (await client.get(id)).positions[12]; // the centre particle, created at x = 0.1
    await client.destroy(id);
    return x - 0.1;
  }
  assert.ok(Math.abs((await drift(0)) - 1) < 1e-4, 'linearInertia 0: carried with its frame');
  assert.ok(Math.abs(await drift(1)) < 1e-4, 'linearInertia 1: world space');
});

test('a pulled sheet tears: the step reply lists it and a topology event comes', async () => {
  const W = 24;
  const H = 12;
  const s = 0.05;
  const id = await client.createCloth({ width: W, height: H, spacing: s, gravity: [0, 0, 0], tearStrain: 0.3, sleepThreshold: 0 });
  const events = [];
  const onEvent = (e) => {
    if (e.event === 'topology') events.push(e);
  };
  client.on('event', onEvent);
  await client.subscribe({ instance: id });
  const rows = [...Array(H).keys()];
  await client.pin(id, rows.map((y) => y * W));
  let tore = 0;
  for (let f = 1; f <= 150 && tore < 3; f++) {
    await client.pinBulk(id, rows.map((y) => y * W + W - 1), rows.map((y) => [(W - 1) * s + f / 60, -y * s, 0]));
    const reply = await client.step({ instance: id });
    if (reply.torn) {
      assert.deepEqual(reply.torn, [id]);
      tore++;
    }
  }
  assert.ok(tore > 0, 'the sheet tore');
  await client.ping(); // what came before the pong has been read
  client.off('event', onEvent);
  await client.unsubscribe({ instance: id });
  const t = await client.topology(id);
  assert.ok(t.particles > W * H, `${t.particles} particles after tearing`);
  assert.equal(t.uvs.length, 2 * t.particles, 'new vertices keep their UVs');
  assert.ok(events.length >= tore);
  assert.equal(events.at(-1).instance, id);
  assert.equal(events.at(-1).triangles, t.triangles.length / 3);
  await client.destroy(id);
});
