'use strict';
// Scenes sharded over three real clothd processes (each with its own
// --data-dir) through ShardedClient: every scene answers on the server
// rendezvous hashing names, each server holds only its own scenes, every
// scene-taking call (scene, scenes, createSoftbody, save, record, ...) goes
// to the scene's server, ShardedClient.scenes() merges every server's list,
// and a stopped server is an EndpointUnavailable naming it (no failover).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { Client, Scene, ShardedClient, EndpointUnavailable, placeScene } = require('..');
const { startServer } = require('../test-support/server.js');

const SCENES = Array.from({ length: 12 }, (_, i) => `node-scene-${i}`);
let servers = [];
let endpoints = [];
let dirs = [];

before(async () => {
  dirs = [0, 1, 2].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-shard-')));
  servers = await Promise.all(dirs.map((dir) => startServer(['--workers', '1', '--data-dir', dir])));
  endpoints = servers.map((s) => `${s.host}:${s.port}`);
  // Sharding needs the servers' scenes: a clothd without them fails the tests.
  const probe = await Client.connect(servers[0].address);
  try {
    assert.ok(probe.supports('scenes'), `hello lists no "scenes" feature: ${JSON.stringify(probe.features)}`);
  } finally {
    await probe.close();
  }
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop().catch(() => {})));
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** The scene names `server` lists itself. */
async function listedBy(server) {
  const c = await Client.connect(server.address);
  try {
    return (await c.scenes()).map((e) => e.scene);
  } finally {
    await c.close();
  }
}

test('every scene answers on its own server, which holds only its scenes', async () => {
  const shards = new ShardedClient(endpoints);
  try {
    const ids = {};
    for (const name of SCENES) ids[name] = await shards.scene(name).createCloth({ width: 4, height: 4 });
    for (const name of SCENES) {
      const scene = shards.scene(name);
      assert.equal(scene.endpoint, placeScene(endpoints, name));
      assert.equal((await scene.step(1 / 60)).stepped, 1, name);
      assert.equal((await scene.get(ids[name])).frame, 1, name);
      assert.deepEqual(await scene.instances(), [ids[name]], name);
    }
    for (const [i, server] of servers.entries()) {
      const c = await Client.connect(server.address);
      const held = (await c.status()).instances.map((s) => s.instance).sort();
      const placed = SCENES.filter((n) => placeScene(endpoints, n) === endpoints[i]).map((n) => ids[n]).sort();
      assert.deepEqual(held, placed, endpoints[i]);
      await c.close();
    }
    // Connected to exactly the servers its scenes were placed on: with
    // random ports, 12 scenes miss one of 3 servers about 2% of the time.
    const used = new Set(SCENES.map((n) => placeScene(endpoints, n)));
    assert.deepEqual([...shards.connected].sort(), [...used].sort());
  } finally {
    await shards.close();
  }
});

test('every scene-taking call goes to the scene\'s server; scenes() merges every server\'s', async () => {
  const shards = new ShardedClient(endpoints);
  const names = Array.from({ length: 9 }, (_, i) => `node-route-${i}`);
  try {
    assert.ok(new Set(names.map((n) => shards.endpoint(n))).size >= 2, 'the scenes spread over two servers or more');
    for (const name of names) {
      const scene = shards.scene(name);
      const ids = [await scene.createCloth({ width: 3, height: 3 }),
        await scene.createSoftbody({ shape: 'box', size: [0.2, 0.2, 0.2], cells: [1, 1, 1] })];
      const held = await scene.scene({ ephemeral: true });
      assert.equal(held.scene, name);
      assert.deepEqual(held.instances, ids, name);
      assert.equal(held.owned, true);
      assert.deepEqual(await scene.scenes(), [{ scene: name, instances: 2, ephemeral: true }]);
      assert.equal((await scene.save(name)).instances, 2, `${name}: save holds the scene's instances`);
      assert.deepEqual((await scene.record(name)).instances, ids, name);
      await scene.step(1 / 60);
      assert.equal((await scene.record(null, { stop: true })).frames, 1, name);
      assert.equal((await scene.scene({ ephemeral: false })).owned, false);
    }
    for (const [i, server] of servers.entries()) {
      const mine = names.filter((n) => placeScene(endpoints, n) === endpoints[i]);
      assert.deepEqual((await listedBy(server)).filter((n) => n.startsWith('node-route-')), mine, endpoints[i]);
      for (const n of mine) assert.ok(fs.existsSync(path.join(dirs[i], `${n}.cds`)), `${n}.cds on ${endpoints[i]}`);
      for (const n of mine) assert.ok(fs.existsSync(path.join(dirs[i], `${n}.cdj`)), `${n}.cdj on ${endpoints[i]}`);
    }
    const merged = (await shards.scenes()).filter((e) => e.scene.startsWith('node-route-'));
    assert.deepEqual(merged, [...names].sort().map((n) => (
      { scene: n, instances: 2, ephemeral: false, endpoint: placeScene(endpoints, n) })));
    for (const name of names) await shards.scene(name).destroy();
    assert.deepEqual((await shards.scenes()).filter((e) => e.scene.startsWith('node-route-')), []);
  } finally {
    await shards.close();
  }
});

test('a stopped server is named in the error and nothing fails over', async () => {
  const shards = new ShardedClient(endpoints, { connectTimeoutMs: 3000 });
  try {
    const victim = endpoints[2];
    const name = SCENES.find((n) => placeScene(endpoints, n) === victim);
    const other = SCENES.find((n) => placeScene(endpoints, n) !== victim);
    await shards.scene(name).createCloth({ width: 4, height: 4 });
    await servers[2].stop();
    for (let i = 0; i < 2; i++) { // the connection that broke, then a refused connect
      await assert.rejects(shards.scene(name).step(1 / 60), (err) => {
        assert.ok(err instanceof EndpointUnavailable, err.stack);
        assert.equal(err.endpoint, victim);
        assert.equal(err.scene, name);
        assert.ok(err.message.includes(victim), err.message);
        return true;
      });
    }
    assert.ok((await shards.scene(other).step(1 / 60)).stepped >= 1, 'the other servers go on');
    for (const server of servers.slice(0, 2)) {
      const c = await Client.connect(server.address);
      assert.deepEqual(await new Scene(c, name).instances(), [], 'not recreated elsewhere');
      await c.close();
    }
  } finally {
    await shards.close();
  }
});
