'use strict';
// Scene placement with no server: the rendezvous hash reproduces
// protocol/placement_vectors.json (which the Python and C clients check
// too), a fourth endpoint moves about a quarter of 1,000 scenes and only
// onto itself, removing one moves only its scenes, and a Scene stamps its
// name on exactly the commands that take one.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const net = require('node:net');

const {
  Client, Scene, ShardedClient, EndpointUnavailable, IncompatibleServer, FeatureMissing, SCENE_COMMANDS, rendezvousWeight,
  placeScene, checkSceneName, parseEndpoint,
} = require('..');
const { fnv1a64, fmix64 } = require('../lib/placement.js');

const REPO = path.join(__dirname, '..', '..', '..');
const V = JSON.parse(fs.readFileSync(path.join(REPO, 'protocol', 'placement_vectors.json'), 'utf8'));
const EPS = ['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003'];
const NAMES = Array.from({ length: 1000 }, (_, i) => `scene-${i}`);
const hex = (h) => BigInt(`0x${h}`);

test('fnv1a64 and fmix64 match their published values', () => {
  for (const c of V.fnv1a64) assert.equal(fnv1a64(Buffer.from(c.input)), hex(c.hash), c.input);
  for (const c of V.fmix64) assert.equal(fmix64(hex(c.input)), hex(c.output), c.input);
});

test('every weight vector is reproduced', () => {
  assert.ok(V.weights.length >= 8);
  for (const c of V.weights) assert.equal(rendezvousWeight(c.endpoint, c.scene), hex(c.weight), `${c.endpoint} ${c.scene}`);
});

test('every placement vector and the counts over 1,000 scenes are reproduced', () => {
  for (const c of V.placements) {
    assert.equal(placeScene(V.endpoints, c.scene), c.owner3, c.scene);
    assert.equal(placeScene([...V.endpoints, V.added], c.scene), c.owner4, c.scene);
  }
  const s = V.scenes;
  const names = Array.from({ length: s.count }, (_, i) => s.pattern.replace('{i}', String(i)));
  const owners = names.map((n) => placeScene(V.endpoints, n));
  const per = {};
  for (const o of owners) per[o] = (per[o] ?? 0) + 1;
  assert.deepEqual(per, s.perEndpoint3);
  const added = [...V.endpoints, V.added];
  assert.equal(names.filter((n, i) => placeScene(added, n) !== owners[i]).length, s.movedWhenAdded);
  const removed = V.endpoints.filter((e) => e !== V.removed);
  assert.equal(names.filter((n, i) => placeScene(removed, n) !== owners[i]).length, s.movedWhenRemoved);
});

test('a fourth endpoint takes about a quarter of the scenes, and only onto itself', () => {
  const added = '127.0.0.1:7004';
  const moved = NAMES.filter((n) => placeScene(EPS, n) !== placeScene([...EPS, added], n));
  assert.ok(moved.length >= 200 && moved.length <= 300, `${moved.length} of 1000 moved`);
  assert.deepEqual(new Set(moved.map((n) => placeScene([...EPS, added], n))), new Set([added]));
});

test('removing an endpoint moves only its scenes', () => {
  const gone = EPS[1];
  const rest = EPS.filter((e) => e !== gone);
  const moved = NAMES.filter((n) => placeScene(EPS, n) !== placeScene(rest, n));
  assert.deepEqual(moved, NAMES.filter((n) => placeScene(EPS, n) === gone));
  assert.ok(moved.length > 250);
});

test('the order of the endpoints does not matter', () => {
  for (const n of NAMES.slice(0, 200)) assert.equal(placeScene(EPS, n), placeScene([...EPS].reverse(), n));
  assert.throws(() => placeScene([], 'x'), RangeError);
});

test('endpoints and scene names are checked, naming what is wrong', () => {
  assert.deepEqual(parseEndpoint('127.0.0.1:7878'), { host: '127.0.0.1', port: 7878 });
  assert.deepEqual(parseEndpoint('[::1]:7001'), { host: '::1', port: 7001 });
  for (const bad of ['127.0.0.1', ':7878', 'host:', 'host:0', 'host:65536', 'host:x'])
    assert.throws(() => parseEndpoint(bad), (e) => e.message.includes(JSON.stringify(bad)), bad);
  assert.equal(checkSceneName('npc-capes.v2:a_b'), 'npc-capes.v2:a_b');
  for (const bad of ['', 'x'.repeat(65), 'a b', 'é', 'a/b']) assert.throws(() => checkSceneName(bad), bad);
  assert.throws(() => new ShardedClient([]), RangeError);
  assert.throws(() => new ShardedClient(['a:1', 'a:1']), /listed twice/);
  assert.throws(() => new ShardedClient('a:1'), TypeError);
  const shards = new ShardedClient(EPS);
  for (const n of ['npc-capes', 'default', 'level-3:flags']) assert.equal(shards.scene(n).endpoint, placeScene(EPS, n));
  assert.deepEqual(shards.connected, []);
});

test('a Scene stamps its name on the commands that take one, and only there', async () => {
  // A client that never connects: its request lines are read from the write queue.
  const client = new Client({ port: 1 });
  client.connect = () => new Promise(() => {});
  client._flush = () => {};
  const scene = new Scene(client, 'npc-capes');
  // Scene calls await the connection first: read the line a tick later.
  const sent = async () => {
    await new Promise(setImmediate);
    return JSON.parse(client._writeQueue.pop());
  };
  scene.createCloth({ width: 4 });
  assert.equal((await sent()).scene, 'npc-capes');
  scene.step(0.01);
  assert.equal((await sent()).scene, 'npc-capes');
  scene.wind([1, 0, 0], 3);
  assert.equal((await sent()).scene, 'npc-capes');
  for (const [cmd, fields] of [['ping', {}], ['stats', {}], ['load', { name: 'a' }], ['wind', { wind: [1, 0, 0] }]]) {
    scene.request(cmd, fields);
    assert.equal((await sent()).scene, undefined, cmd);
  }
  scene.request('step', { scene: 'other' });
  assert.equal((await sent()).scene, 'other');
  assert.equal(client._scene, null);
  client.request('create', {});
  assert.equal((await sent()).scene, undefined);
  const table = fs.readFileSync(path.join(REPO, 'protocol', 'commands.h'), 'utf8');
  for (const cmd of SCENE_COMMANDS) assert.ok(table.includes(`"${cmd}"`), cmd);
});

test('a down endpoint is named in the error, and nothing fails over', async () => {
  const shards = new ShardedClient(['127.0.0.1:1', '127.0.0.1:2'], { connectTimeoutMs: 2000 });
  const scene = shards.scene('npc-capes');
  await assert.rejects(scene.createCloth({ width: 4, height: 4 }), (err) => {
    assert.ok(err instanceof EndpointUnavailable);
    assert.equal(err.endpoint, scene.endpoint);
    assert.equal(err.scene, 'npc-capes');
    assert.ok(err.message.includes(scene.endpoint) && err.message.includes('npc-capes'), err.message);
    assert.equal(err.cause.code, 'ECONNREFUSED');
    return true;
  });
  assert.deepEqual(shards.connected, []);
  await shards.close();
});

test('a server without scenes is refused by name (its hello lists no "scenes" feature)', async () => {
  // A fake clothd from before scenes: answers hello, then waits.
  const server = net.createServer((socket) => {
    let buf = '';
    socket.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const { id } = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      socket.write(`${JSON.stringify({ id, ok: true, server: 'clothd', commands: ['create', 'step', 'hello'] })}\n`);
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `127.0.0.1:${server.address().port}`;
  const shards = new ShardedClient([endpoint]);
  try {
    await assert.rejects(shards.scene('npc-capes').createCloth({ width: 4 }), (err) => {
      assert.ok(err instanceof IncompatibleServer, err.stack);
      assert.equal(err.code, 'incompatible_server');
      assert.equal(err.endpoint, endpoint);
      assert.ok(err instanceof FeatureMissing);
      assert.deepEqual(err.features, ['scenes']);
      assert.ok(err.message.includes(endpoint) && err.message.includes('lacks the feature "scenes"'), err.message);
      return true;
    });
    assert.deepEqual(shards.connected, []);
  } finally {
    await shards.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
