'use strict';
// The Node client over a Unix-domain socket (`clothd --unix PATH`): the
// same protocol as over TCP. `{ path }` creates, steps and gets; a
// subscription brings binary frames (large ones, over many reads) bitwise
// equal to get; errors name "unix:PATH" (nothing listening there, a
// missing feature, a path too long for sun_path); a ShardedClient mixes a
// "unix:PATH" endpoint with a "host:port" one.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const {
  Client, ShardedClient, EndpointUnavailable, FeatureMissing, placeScene, parseEndpoint, UNIX_PATH_MAX,
} = require('..');
const { startServer } = require('../test-support/server.js');
const { bytesOf } = require('../test-support/frames.js');

let server; // TCP and a Unix socket
let tcpOnly; // the other shard

before(async () => {
  [server, tcpOnly] = await Promise.all([
    startServer(['--workers', '1'], 10000, { unix: true }),
    startServer(['--workers', '1']),
  ]);
});

after(async () => {
  await Promise.all([server, tcpOnly].filter(Boolean).map((s) => s.stop().catch(() => {})));
});

/** A path in a fresh folder where nothing listens. */
function nowhere(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-nothing-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'clothd.sock');
}

test('over the socket: hello, create, step and get', async () => {
  const c = await Client.connect(server.unixAddress);
  try {
    assert.equal(c.endpoint, `unix:${server.path}`);
    assert.equal(c.path, server.path);
    assert.ok(c.supports('scenes'), 'hello came through the socket');
    const id = await c.createCloth({ width: 4, height: 4, spacing: 0.1, ephemeral: true });
    const before0 = await c.get(id);
    for (let k = 0; k < 5; k++) await c.step({ dt: 1 / 60, instances: [id] });
    const now = await c.get(id);
    assert.equal(now.frame, 5);
    for (let i = 0; i < 16; i++) // free fall: 0.5 g t^2 = 0.034 m
      assert.ok(now.positions[3 * i + 1] < before0.positions[3 * i + 1] - 0.02, `particle ${i} falls`);
    // The TCP side sees the same server.
    const tcp = await Client.connect(server.address);
    try {
      assert.ok((await tcp.status()).instances.some((s) => s.instance === id));
    } finally {
      await tcp.close();
    }
  } finally {
    await c.close();
  }
});

test('over the socket: a subscription brings binary frames bitwise equal to get', async () => {
  const c = await Client.connect({ path: server.path });
  try {
    const id = await c.createCloth({ width: 64, height: 64, spacing: 0.02, ephemeral: true }); // 49,192-byte frames
    const frames = c.frames({ instance: id });
    await c.subscribe({ instance: id });
    await c.step({ dt: 1 / 60, instances: [id] });
    const state = await c.get(id);
    const first = (await frames.next()).value;
    const second = (await frames.next()).value;
    assert.deepEqual([first.frame, second.frame, second.count], [0, 1, 4096]);
    assert.ok(bytesOf(second.positions).equals(bytesOf(state.positions)), 'positions bitwise equal to get');
    await frames.return();
  } finally {
    await c.close();
  }
});

test('nothing listening at the path: the error names unix:PATH', async (t) => {
  const where = nowhere(t);
  await assert.rejects(Client.connect({ path: where }), (err) => {
    assert.equal(err.code, 'ENOENT');
    assert.ok(err.message.startsWith(`clothd: cannot connect to unix:${where}: `), err.message);
    return true;
  });
});

test('a path too long for sun_path is refused by name, never cut short', () => {
  const long = `/tmp/${'x'.repeat(UNIX_PATH_MAX)}`;
  assert.throws(() => new Client({ path: long }),
    (err) => err instanceof RangeError
      && err.message === `path: the path is ${Buffer.byteLength(long)} bytes; a Unix socket path holds at most ${UNIX_PATH_MAX} (sun_path)`);
  assert.throws(() => new Client({ path: '' }), RangeError);
});

test('a missing feature names unix:PATH', async () => {
  // No --data-dir: the server lists no "snapshots".
  await assert.rejects(Client.connect({ path: server.path, require: ['snapshots'] }), (err) => {
    assert.ok(err instanceof FeatureMissing);
    assert.equal(err.endpoint, `unix:${server.path}`);
    assert.ok(err.message.includes(`unix:${server.path}`), err.message);
    return true;
  });
});

test('endpoints: "unix:PATH" is a socket, "unix:" and digits a host named unix', () => {
  assert.deepEqual(parseEndpoint('unix:/run/clothd.sock'), { path: '/run/clothd.sock' });
  assert.deepEqual(parseEndpoint('unix:./7878'), { path: './7878' });
  assert.deepEqual(parseEndpoint('unix:7878'), { host: 'unix', port: 7878 });
  assert.throws(() => parseEndpoint('unix:'), RangeError);
  assert.throws(() => parseEndpoint(`unix:/${'x'.repeat(200)}`), /unix:\/x+": path: the path is 201 bytes/);
});

test('sharded: one unix endpoint and one TCP endpoint, each serving its scenes', async (t) => {
  const unixEp = `unix:${server.path}`;
  const tcpEp = `${tcpOnly.host}:${tcpOnly.port}`;
  const endpoints = [tcpEp, unixEp];
  const shards = new ShardedClient(endpoints);
  try {
    for (const [ep, srv] of [[unixEp, server], [tcpEp, tcpOnly]]) {
      const name = Array.from({ length: 1000 }, (_, i) => `mixed-${i}`).find((n) => placeScene(endpoints, n) === ep);
      const scene = shards.scene(name);
      assert.equal(scene.endpoint, ep);
      const id = await scene.createCloth({ width: 4, height: 4 });
      assert.equal((await scene.step(1 / 60)).stepped, 1);
      assert.equal((await scene.get(id)).frame, 1);
      const direct = await Client.connect(srv.address); // the scene is on that server, over TCP too
      try {
        assert.deepEqual((await direct.status({ scene: name })).instances.map((s) => s.instance), [id]);
      } finally {
        await direct.close();
      }
      await scene.destroy();
    }
    assert.deepEqual([...shards.connected].sort(), [...endpoints].sort());
  } finally {
    await shards.close();
  }
  // A unix endpoint where nothing listens: EndpointUnavailable naming it.
  const gone = `unix:${nowhere(t)}`;
  const lost = new ShardedClient([tcpEp, gone]);
  try {
    const name = Array.from({ length: 1000 }, (_, i) => `lost-${i}`).find((n) => placeScene([tcpEp, gone], n) === gone);
    await assert.rejects(lost.scene(name).createCloth({ width: 3, height: 3 }), (err) => {
      assert.ok(err instanceof EndpointUnavailable);
      assert.equal(err.endpoint, gone);
      assert.ok(err.message.includes(`cannot connect to ${gone}`), err.message);
      return true;
    });
  } finally {
    await lost.close();
  }
});
