'use strict';
// save and load against the real server (started with --data-dir): a saved
// cloth comes back under its id, bit for bit, and the errors keep their codes.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { Client, ClothdError } = require('..');
const { startServer } = require('../test-support/server.js');

let server;
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-snap-'));
  server = await startServer(['--workers', '1', '--data-dir', tmp]);
});

after(async () => {
  if (server) await server.stop().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

test('save then load with replace gives the same instance back', async () => {
  const c = await Client.connect(server.address);
  try {
    const id = await c.createCloth({ width: 6, height: 6 });
    await c.step();
    const saved = await c.save('node-world');
    assert.equal(saved.name, 'node-world');
    assert.equal(saved.instances, 1);
    assert.ok(fs.existsSync(path.join(tmp, 'node-world.cds')));
    const before1 = await c.request('get', { instance: id });
    await c.step();
    assert.deepEqual(await c.load('node-world', { replace: true }), [id]);
    const after1 = await c.request('get', { instance: id });
    assert.equal(after1.frame, 1);
    assert.deepEqual(after1.positions, before1.positions);
    await assert.rejects(c.load('node-world'), (e) => e instanceof ClothdError && e.code === 'invalid_argument');
    await assert.rejects(c.save('../out'), (e) => e instanceof ClothdError && e.code === 'invalid_argument');
    await assert.rejects(c.load('missing'), (e) => e instanceof ClothdError && e.code === 'not_found');
  } finally {
    c.close();
  }
});

test('record then replay rebuilds the instance under a new id, bit for bit', async () => {
  const c = await Client.connect(server.address);
  try {
    const id = await c.createCloth({ width: 5, height: 5 });
    const started = await c.record('node-journal', { instances: [id] });
    assert.deepEqual(started.instances, [id]);
    for (let k = 0; k < 10; k++) {
      await c.request('wind', { instance: id, wind: [k, 0, 1] });
      await c.step();
    }
    const stopped = await c.record(null, { stop: true });
    assert.equal(stopped.frames, 10);
    const live = await c.request('get', { instance: id });
    const r = await c.replay('node-journal');
    assert.deepEqual(r.recorded, [id]);
    assert.equal(r.frames, 10);
    assert.equal(r.complete, true);
    const copy = await c.request('get', { instance: r.instances[0] });
    assert.deepEqual(copy.positions, live.positions);
  } finally {
    c.close();
  }
});
