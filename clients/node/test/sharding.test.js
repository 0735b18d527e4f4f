'use strict';
// Scenes sharded over three real clothd processes through ShardedClient:
// every scene answers on the server rendezvous hashing names, each server
// holds only its own scenes, and a stopped server is an EndpointUnavailable
// naming it (no failover). Needs the server's scenes: on a server whose
// hello lists no "scene" command the tests are skipped, saying so.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { Client, Scene, ShardedClient, EndpointUnavailable, placeScene } = require('..');
const { startServer } = require('../test-support/server.js');

const SCENES = Array.from({ length: 12 }, (_, i) => `node-scene-${i}`);
let servers = [];
let endpoints = [];
let noScenes = null; // why the tests are skipped, or null

before(async () => {
  servers = await Promise.all([0, 1, 2].map(() => startServer(['--workers', '1'])));
  endpoints = servers.map((s) => `${s.host}:${s.port}`);
  const probe = await Client.connect(servers[0].address);
  try {
    const { commands } = await probe.hello();
    if (!(commands ?? []).includes('scene'))
      noScenes = 'this clothd has no scenes yet (hello lists no "scene" command); runs once they are on main';
  } finally {
    await probe.close();
  }
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop().catch(() => {})));
});

test('every scene answers on its own server, which holds only its scenes', async (t) => {
  if (noScenes) return t.skip(noScenes);
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
    assert.deepEqual([...shards.connected].sort(), [...endpoints].sort());
  } finally {
    await shards.close();
  }
});

test('a stopped server is named in the error and nothing fails over', async (t) => {
  if (noScenes) return t.skip(noScenes);
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
