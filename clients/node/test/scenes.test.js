'use strict';
// Scenes and connection-owned lifetimes through the Node client, against
// the real server (the READMEs' snippets: readme.test.js).

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

async function waitUntil(predicate, what) {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`${what}: not within 5 s`);
}

const sceneNames = async (c) => (await c.scenes()).map((s) => s.scene);

test('create, step, status, get and destroy by scene', async () => {
  const a = await client.createCloth({ width: 4, height: 4, scene: 'node-a', sleepThreshold: 0 });
  const b = await client.createCloth({ width: 4, height: 4, scene: 'node-b' });
  const r = await client.step({ scene: 'node-a' });
  assert.equal(r.stepped, 1);
  const sa = await client.get(a);
  assert.equal(sa.scene, 'node-a');
  assert.equal(sa.frame, 1);
  assert.equal((await client.get(b)).frame, 0, 'the other scene did not step');
  const st = await client.status({ scene: 'node-a' });
  assert.deepEqual(st.instances.map((e) => e.instance), [a]);
  assert.deepEqual(st.scenes, [{ scene: 'node-a', instances: 1, ephemeral: false }]);
  assert.deepEqual(await client.scenes({ scene: 'node-b' }), [{ scene: 'node-b', instances: 1, ephemeral: false }]);
  await assert.rejects(client.request('get', { instance: a, scene: 'node-b' }), (err) => {
    assert.ok(err instanceof ClothdError);
    assert.equal(err.code, 'not_found');
    assert.equal(err.message, `instance: instance ${a} is not in scene "node-b"`);
    return true;
  });
  assert.deepEqual(await client.destroy({ scene: 'node-a' }), [a]);
  assert.deepEqual(await client.destroy({ scene: 'node-a' }), []);
  assert.deepEqual(await client.destroy(b), [b]);
});

test('a scene subscription receives frames of instances created later', async () => {
  const viewer = await Client.connect(server.address);
  try {
    const frames = [];
    viewer.on('frame', (f) => frames.push([f.instance, f.frame]));
    const reply = await viewer.subscribe({ scene: 'node-sub' });
    assert.equal(reply.scene, 'node-sub');
    assert.deepEqual(reply.instances, []);
    const seen = await client.createCloth({ width: 3, height: 3, scene: 'node-sub', sleepThreshold: 0 });
    const unseen = await client.createCloth({ width: 3, height: 3, scene: 'node-other', sleepThreshold: 0 });
    await client.step({ instances: [seen, unseen] });
    await viewer.ping(); // frames sent before this reply have arrived
    await waitUntil(() => frames.length >= 2, 'two frames');
    assert.deepEqual(frames, [[seen, 0], [seen, 1]]);
    await viewer.unsubscribe({ scene: 'node-sub' });
    await client.destroy({ instances: [seen, unseen] });
  } finally {
    await viewer.close();
  }
});

test('ephemeral instances and a held scene go with their connection', async () => {
  const owner = await Client.connect(server.address);
  const mine = await owner.createCloth({ width: 3, height: 3, ephemeral: true });
  const held = await owner.scene('node-match', { ephemeral: true });
  assert.deepEqual(held, { ...held, scene: 'node-match', instances: [], ephemeral: true, owned: true });
  const guest = await client.createCloth({ width: 3, height: 3, scene: 'node-match' });
  const kept = await client.createCloth({ width: 3, height: 3, ephemeral: false });
  assert.equal((await client.get(mine)).ephemeral, true);
  assert.equal((await client.get(guest)).ephemeral, true, "its scene's tie");
  await owner.close();
  const live = async () => (await client.status()).instances.map((e) => e.instance);
  await waitUntil(async () => !(await live()).includes(mine) && !(await live()).includes(guest), 'destroyed');
  assert.ok((await live()).includes(kept));
  assert.ok(!(await sceneNames(client)).includes('node-match'));
  await client.destroy(kept);
});
