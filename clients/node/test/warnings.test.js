'use strict';
// Issue 12 against the real server: a reply's warnings (members the server
// did not read) as the client's 'warning' event, strict connections,
// createSoftbody and topology of a soft body, and a refused connection
// naming the address.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');

const { Client, ClothdError, ClothdWarning } = require('..');
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

test('a misspelt option runs past and is a warning event', async () => {
  const seen = [];
  const onWarning = (w) => seen.push(w);
  client.on('warning', onWarning);
  try {
    const id = await client.createCloth({ width: 3, height: 3, stretchComplience: 0.01 });
    assert.equal(seen.length, 1);
    assert.ok(seen[0] instanceof ClothdWarning);
    assert.equal(seen[0].message, 'unknown member "stretchComplience" (did you mean "stretchCompliance"?)');
    assert.equal(seen[0].cmd, 'create');
    assert.equal(seen[0].reply.instance, id);
    await client.get(id);
    assert.equal(seen.length, 1, 'no warning when the reply has none');
    await assert.rejects(client.request('destroy', { instance: 999999, force: true }),
      (err) => err instanceof ClothdError && err.code === 'not_found');
    assert.equal(seen.length, 2, 'an error reply carries them too');
    assert.equal(seen[1].message, 'unknown member "force"');
    await client.destroy(id);
  } finally {
    client.off('warning', onWarning);
  }
});

test('without a listener the warning goes to process.emitWarning', async () => {
  const seen = [];
  const onWarning = (w) => seen.push(w);
  process.on('warning', onWarning);
  try {
    await client.request('ping', { verbose: true });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(seen.length, 1);
    assert.equal(seen[0].name, 'ClothdWarning');
    assert.equal(seen[0].message, 'clothd: unknown member "verbose"');
  } finally {
    process.off('warning', onWarning);
  }
});

test('strict: the server refuses instead', async () => {
  const strict = await Client.connect({ ...server.address, strict: true });
  try {
    await assert.rejects(strict.createCloth({ width: 3, height: 3, widht: 4 }), (err) =>
      err instanceof ClothdError && err.code === 'invalid_argument' &&
      err.message === 'widht: unknown member (did you mean "width"?)');
    const hello = await strict.hello();
    assert.equal(hello.strict, true);
    assert.equal(hello.protocol, 1);
    assert.ok(hello.commands.includes('hello'));
    assert.equal((await strict.hello({ strict: false })).strict, false);
  } finally {
    await strict.close();
  }
});

test('createSoftbody makes a ball and a given mesh, and topology gives its surface', async () => {
  const ball = await client.createSoftbody({ shape: 'ball', radius: 0.3, resolution: 6, center: [0, 1, 0] });
  const info = await client.get(ball);
  assert.equal(info.type, 'softbody');
  assert.equal(info.positions.length / 3, 179);
  const topo = await client.topology(ball);
  assert.equal(topo.type, 'softbody');
  assert.ok(topo.triangles instanceof Uint32Array);
  assert.ok(topo.triangles.length > 0 && topo.triangles.length % 3 === 0);
  assert.ok(Math.max(...topo.triangles) < 179);
  // One tetrahedron, vertices given flat.
  const tet = await client.createSoftbody({
    vertices: [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1],
    tetrahedra: [0, 1, 2, 3],
    volumeStiffness: 1,
  });
  const t = await client.topology(tet);
  assert.equal(t.particles, 4);
  assert.equal(t.triangles.length, 12, 'a tetrahedron has 4 faces');
  await assert.rejects(client.createSoftbody({ shape: 'cube' }), (err) =>
    err.code === 'invalid_argument' && err.message === 'shape: unknown shape "cube" (one of "box" or "ball")');
  await client.destroy(ball);
  await client.destroy(tet);
});

test('a refused connection names the address', async () => {
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  await assert.rejects(Client.connect({ host: '127.0.0.1', port }), (err) =>
    err.code === 'ECONNREFUSED' && err.message.startsWith(`clothd: cannot connect to 127.0.0.1:${port}: `));
});
