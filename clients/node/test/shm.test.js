'use strict';
// Shared-memory frames (subscribe({shm: true}); PROTOCOL.md "Shared-memory
// frames") against the real server: the frames read out of the ring equal a
// plain subscriber's over TCP and over the Unix socket; a reader that stalls
// while the ring wraps gets the frames still whole and counts the
// overwritten ones in stats.missedFrames; a frame over a quarter of the ring
// comes as an ordinary frame; --shm-mb 0 is refused through the error API;
// a ring that cannot be opened rejects subscribe with ShmUnavailable and its
// references count as missed; decodeFrame says what a bare reference is.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const {
  Client, FeatureMissing, InvalidArgument, ProtocolError, ShmUnavailable, decodeFrame, decodeReference, FLAG_SHARED,
  SHM_REFERENCE_SIZE,
} = require('..');
const { startServer, REPO_ROOT } = require('../test-support/server.js');
const { header, bytesOf, take } = require('../test-support/frames.js');

const DT = 1 / 60;
let server; // TCP and a Unix socket, the default 64 MiB ring
let small; // --shm-mb 1
let none; // --shm-mb 0

before(async () => {
  [server, small, none] = await Promise.all([
    startServer(['--workers', '1'], 10000, { unix: true }),
    startServer(['--workers', '1', '--shm-mb', '1']),
    startServer(['--workers', '1', '--shm-mb', '0']),
  ]);
});

after(async () => {
  await Promise.all([server, small, none].filter(Boolean).map((s) => s.stop().catch(() => {})));
});

async function sameFramesAsPlain(shmAddress) {
  const driver = await Client.connect(server.address);
  const shm = await Client.connect(shmAddress);
  const plain = await Client.connect(server.address);
  try {
    const id = await driver.createCloth({ width: 12, height: 9, spacing: 0.05, ephemeral: true });
    const fromRing = shm.frames({ instance: id });
    const fromSocket = plain.frames({ instance: id });
    const reply = await shm.subscribe({ instance: id, shm: true, channels: ['normals'] });
    assert.equal(reply.shm.size, 64 << 20);
    assert.deepEqual(shm.shm, reply.shm, 'the ring the reply named is open');
    await plain.subscribe({ instance: id, channels: ['normals'] });
    for (let k = 0; k < 3; k++) await driver.step({ dt: DT, instances: [id] });
    const [got, want] = await Promise.all([take(fromRing, 4), take(fromSocket, 4)]);
    for (let k = 0; k < 4; k++) {
      assert.equal(got[k].frame, k);
      assert.equal(got[k].frame, want[k].frame);
      assert.equal(got[k].time, want[k].time);
      assert.equal(got[k].flags, want[k].flags, 'the frame\'s flags, without bit 3');
      assert.equal(got[k].count, 12 * 9);
      assert.ok(bytesOf(got[k].positions).equals(bytesOf(want[k].positions)), `frame ${k}: the same positions`);
      assert.ok(bytesOf(got[k].normals).equals(bytesOf(want[k].normals)), `frame ${k}: the same normals`);
      assert.equal(got[k].view, true, 'a view on the copied frame, 4-byte aligned');
    }
    assert.equal(shm.stats.missedFrames, 0);
    assert.equal(shm.stats.frames, 4);
  } finally {
    await Promise.all([driver.close(), shm.close(), plain.close()]);
  }
  assert.equal(shm.shm, null, 'closed with the connection');
}

test('shm frames equal a plain subscriber\'s over TCP', async () => {
  await sameFramesAsPlain(server.address);
});

test('shm frames equal a plain subscriber\'s over the Unix socket', async () => {
  await sameFramesAsPlain(server.unixAddress);
});

test('a stalled reader gets the frames still whole (5..12) and counts 5 missed', async () => {
  const shm = await Client.connect(small.address);
  try {
    const frames = shm.frames();
    const reply = await shm.subscribe({ shm: true }); // every instance: none yet, so no frame now
    assert.equal(reply.shm.size, 1 << 20);
    // Another process creates a 100 x 100 cloth (its frame 0 comes to "all")
    // and steps it 12 times while this one's event loop is blocked: nothing
    // is read meanwhile, and the ring (8 frames of 120,040 bytes) wraps.
    const script = `
      const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
      (async () => {
        const c = await Client.connect({ port: ${small.port} });
        const id = await c.createCloth({ width: 100, height: 100, spacing: 0.01 });
        for (let k = 0; k < 12; k++) await c.step({ dt: 1 / 60, instances: [id] });
        await c.ping(); // served after the last step's frame entered the ring (its reply went just before)
        process.stdout.write(String(id));
        await c.end();
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const id = Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 }));
    const got = await take(frames, 8);
    assert.deepEqual(got.map((f) => f.frame), [5, 6, 7, 8, 9, 10, 11, 12]);
    assert.ok(got.every((f) => f.instance === id && f.count === 10000));
    assert.equal(shm.stats.missedFrames, 5, 'frames 0..4 were overwritten before they were read');
    await shm.ping(); // anything else would have come before the pong
    assert.equal(frames.queued, 0, 'no other frame');
    assert.equal(shm.stats.frames, 8);
  } finally {
    await shm.close();
  }
});

test('a frame over a quarter of the ring comes as an ordinary frame', async () => {
  const driver = await Client.connect(small.address);
  const shm = await Client.connect(small.address);
  try {
    const id = await driver.createCloth({ width: 160, height: 160, spacing: 0.01, ephemeral: true });
    const frames = shm.frames({ instance: id });
    await shm.subscribe({ instance: id, shm: true });
    const [f] = await take(frames, 1);
    assert.equal(f.frame, 0);
    assert.equal(f.flags, 0);
    assert.equal(f.count, 160 * 160, '307,240 bytes > 1 MiB / 4: through the socket');
    const state = await driver.get(id);
    assert.ok(bytesOf(f.positions).equals(bytesOf(state.positions)));
    assert.equal(shm.stats.missedFrames, 0);
  } finally {
    await Promise.all([driver.close(), shm.close()]);
  }
});

test('--shm-mb 0: FeatureMissing before sending, or the server\'s invalid_argument without hello', async () => {
  const c = await Client.connect(none.address);
  const raw = await Client.connect({ ...none.address, hello: false });
  try {
    assert.equal(c.supports('shm'), false);
    const id = await c.createCloth({ width: 4, height: 4, ephemeral: true });
    await assert.rejects(c.subscribe({ instance: id, shm: true }), (err) => {
      assert.ok(err instanceof FeatureMissing, err.stack);
      assert.deepEqual(err.features, ['shm']);
      return true;
    });
    await assert.rejects(raw.subscribe({ instance: id, shm: true }), (err) => {
      assert.ok(err instanceof InvalidArgument, err.stack);
      assert.equal(err.code, 'invalid_argument');
      assert.equal(err.message, 'shm: this server has no shared memory (--shm-mb 0)');
      return true;
    });
    assert.equal(raw.shm, null);
    let frames = 0;
    raw.on('frame', () => frames++);
    await c.step({ dt: DT, instances: [id] });
    await raw.ping();
    assert.equal(frames, 0, 'nothing was subscribed');
  } finally {
    await Promise.all([c.close(), raw.close()]);
  }
});

/** A 56-byte reference to a plain frame of `count` particles at `position`. */
function reference(instance, frame, count, position) {
  const b = Buffer.alloc(SHM_REFERENCE_SIZE);
  header(FLAG_SHARED, SHM_REFERENCE_SIZE, instance, frame, 0, count).copy(b);
  b.writeBigUInt64LE(BigInt(position), 40);
  b.writeUInt32LE(40 + 12 * count, 48);
  return b;
}

test('a ring that cannot be opened: subscribe rejects with ShmUnavailable, its frames count as missed', async () => {
  const name = `/clothd-node-test-${process.pid}-absent`;
  assert.equal(fs.existsSync(`/dev/shm${name}`), false);
  // A fake server: its hello lists "shm", its subscribe names a ring that
  // is not there, and a reference follows.
  const srv = net.createServer((socket) => {
    let rest = '';
    socket.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        const req = JSON.parse(line);
        if (req.cmd === 'hello') socket.write(`{"id":${req.id},"ok":true,"features":["shm"]}\n`);
        else if (req.cmd === 'subscribe') {
          socket.write(`{"id":${req.id},"ok":true,"all":true,"shm":{"name":"${name}","size":1048576}}\n`);
          socket.write(reference(1, 0, 4, 0));
        } else socket.write(`{"id":${req.id},"ok":true,"pong":true}\n`);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const c = await Client.connect({ port: srv.address().port });
  try {
    await assert.rejects(c.subscribe({ shm: true }), (err) => {
      assert.ok(err instanceof ShmUnavailable, err.stack);
      assert.equal(err.code, 'shm_unavailable');
      assert.equal(err.path, `/dev/shm${name}`);
      assert.equal(err.cause.code, 'ENOENT');
      assert.match(err.message, /cannot open the server's ring .* as clothd's user/);
      return true;
    });
    await c.ping(); // the connection goes on; the reference came before the pong
    assert.equal(c.stats.missedFrames, 1);
    assert.equal(c.stats.frames, 0);
    assert.equal(c.shm, null);
  } finally {
    await c.close();
    await new Promise((resolve) => srv.close(resolve));
  }
});

/** PROTOCOL.md's reference test vector (the hex before each row's comment). */
function protocolVector() {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'protocol', 'PROTOCOL.md'), 'utf8');
  const at = text.indexOf('A test vector: the reference to frame 2 of instance 1');
  assert.ok(at >= 0, 'PROTOCOL.md has the reference vector');
  const block = /```\n([\s\S]*?)```/.exec(text.slice(at))[1];
  const hex = block.split('\n').map((row) => row.split('   ')[0].replace(/ /g, '')).join('');
  return Buffer.from(hex, 'hex');
}

test("PROTOCOL.md's reference vector: decodeReference reads it, decodeFrame refuses it", () => {
  const v = protocolVector();
  assert.equal(v.length, SHM_REFERENCE_SIZE);
  assert.deepEqual(decodeReference(v), { instance: 1, frame: 2, flags: 0, count: 4, position: 4096n, length: 88 });
  const mine = reference(1, 2, 4, 4096);
  mine.writeDoubleLE(1.0, 24);
  assert.ok(mine.equals(v), 'the test helper writes the same bytes');
  assert.throws(() => decodeFrame(v), /a shared-memory reference \(flags bit 3\) to frame 2 of instance 1, not a frame/);
});

test('decodeFrame says what a bare reference is; decodeReference checks one', () => {
  const ref = reference(7, 42, 4, 4096);
  assert.throws(() => decodeFrame(ref), (err) => err instanceof ProtocolError &&
    /a shared-memory reference \(flags bit 3\) to frame 42 of instance 7, not a frame/.test(err.message));
  const r = decodeReference(ref);
  assert.deepEqual(r, { instance: 7, frame: 42, flags: 0, count: 4, position: 4096n, length: 88 });
  const wrongLength = Buffer.from(ref);
  wrongLength.writeUInt32LE(100, 48);
  assert.throws(() => decodeReference(wrongLength), /to 100 bytes \(reserved 0\) does not match 4 particles/);
  assert.throws(() => decodeReference(Buffer.concat([ref, Buffer.alloc(4)])), /of 60 bytes \(a reference is 56\)/);
});
