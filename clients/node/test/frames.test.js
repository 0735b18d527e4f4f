'use strict';
// Frame decoding (plain and quantized, with velocities and normals) against
// the shared test vectors and frames encoded here, the decoder's
// rejections, and the stream parser.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const {
  decodeFrame,
  decodeHeader,
  ProtocolError,
  FRAME_HEADER_SIZE,
  FLAG_QUANTIZED,
  FLAG_VELOCITIES,
  FLAG_NORMALS,
  frameSize,
  quantizedFrameSize,
  frameSizeFlags,
  octahedralDecode,
} = require('..');
const { MessageParser } = require('../lib/parser.js');
const { REPO_ROOT } = require('../test-support/server.js');
const { header } = require('../test-support/frames.js');

const VECTORS_PATH = path.join(REPO_ROOT, 'protocol', 'test_vectors.json');

// ---- a reference encoder, written from CONTRACT.md / PROTOCOL.md --------

function encodePlain(instance, frame, time, flat) {
  const count = flat.length / 3;
  const b = Buffer.alloc(frameSize(count));
  header(0, b.length, instance, frame, time, count).copy(b);
  for (let i = 0; i < flat.length; i++) b.writeFloatLE(flat[i], FRAME_HEADER_SIZE + 4 * i);
  return b;
}

// q = round((p - min) / (max - min) * 65535) in float64, halves away from
// zero, clamped to [0, 65535]; 0 on a flat axis. min/max are float32.
function encodeQuantized(instance, frame, time, flat) {
  const f = Float32Array.from(flat);
  const count = f.length / 3;
  const min = [0, 0, 0];
  const max = [0, 0, 0];
  for (let k = 0; k < 3; k++) {
    if (count === 0) continue;
    min[k] = Infinity;
    max[k] = -Infinity;
    for (let i = k; i < f.length; i += 3) {
      min[k] = Math.min(min[k], f[i]);
      max[k] = Math.max(max[k], f[i]);
    }
  }
  const b = Buffer.alloc(quantizedFrameSize(count));
  header(FLAG_QUANTIZED, b.length, instance, frame, time, count).copy(b);
  for (let k = 0; k < 3; k++) {
    b.writeFloatLE(min[k], FRAME_HEADER_SIZE + 4 * k);
    b.writeFloatLE(max[k], FRAME_HEADER_SIZE + 12 + 4 * k);
  }
  let off = FRAME_HEADER_SIZE + 24;
  for (let i = 0; i < f.length; i += 3) {
    for (let k = 0; k < 3; k++, off += 2) {
      const range = max[k] - min[k];
      let q = 0;
      if (range > 0) {
        const s = ((f[i + k] - min[k]) / range) * 65535;
        q = s <= 0 ? 0 : s >= 65535 ? 65535 : Math.round(s); // s > 0: round = half away from zero
      }
      b.writeUInt16LE(q, off);
    }
  }
  return { bytes: b, min: Float32Array.from(min), max: Float32Array.from(max) };
}

function bits(f32) {
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
}

function assertBitwiseEqual(actual, expected, what) {
  assert.ok(actual instanceof Float32Array, `${what}: a Float32Array`);
  assert.equal(actual.length, expected.length, `${what}: length`);
  if (!bits(actual).equals(bits(expected))) {
    const i = actual.findIndex((v, j) => !Object.is(v, expected[j]));
    assert.fail(`${what}: coordinate ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

// A small deterministic PRNG (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- the shared test vectors ------------------------------------------

test('every frame of protocol/test_vectors.json decodes to its "decoded" values', (t) => {
  const doc = JSON.parse(fs.readFileSync(VECTORS_PATH, 'utf8'));
  assert.ok(Array.isArray(doc.frames) && doc.frames.length >= 4, 'test_vectors.json has frames');
  let plain = 0;
  let quantized = 0;
  for (const [index, v] of doc.frames.entries()) {
    const what = `vector ${index + 1} (${v.note})`;
    if ('flags' in v) continue; // the channel vectors: the next test
    assert.equal(typeof v.hex, 'string', `${what}: has hex`);
    assert.ok(v.decoded && typeof v.decoded === 'object', `${what}: has decoded`);
    const bytes = Buffer.from(v.hex, 'hex');
    assert.equal(bytes.length * 2, v.hex.length, `${what}: hex is whole bytes`);
    const isQuantized = (bytes.readUInt16LE(6) & FLAG_QUANTIZED) !== 0;
    if ('quantized' in v) assert.equal(isQuantized, v.quantized === true, `${what}: flags bit 0 agrees with "quantized"`);

    const f = decodeFrame(bytes);
    const d = v.decoded;
    assert.equal(f.instance, d.instance, `${what}: instance`);
    assert.equal(f.frame, d.frame, `${what}: frame`);
    assert.ok(Object.is(f.time, d.time), `${what}: time ${f.time} is exactly ${d.time}`);
    assert.equal(f.count, d.positions.length, `${what}: count`);
    assert.equal(f.quantized, isQuantized, `${what}: quantized`);
    // "positions in decoded are decimals whose nearest float32 is the value": compare bits.
    assertBitwiseEqual(f.positions, Float32Array.from(d.positions.flat()), `${what}: positions`);

    if (isQuantized) {
      quantized++;
      assertBitwiseEqual(Float32Array.from(f.bounds.min), Float32Array.from(d.bboxMin), `${what}: bbox min`);
      assertBitwiseEqual(Float32Array.from(f.bounds.max), Float32Array.from(d.bboxMax), `${what}: bbox max`);
      assert.ok(Array.isArray(v.original), `${what}: a quantized vector has "original"`);
      const original = Float32Array.from(v.original.flat());
      assert.equal(original.length, f.positions.length, `${what}: original length`);
      for (let i = 0; i < original.length; i++) {
        const k = i % 3;
        const tol = (f.bounds.max[k] - f.bounds.min[k]) / 65535 / 2 + 1e-6;
        assert.ok(Math.abs(f.positions[i] - original[i]) <= tol, `${what}: coordinate ${i} ${f.positions[i]} within ${tol} of ${original[i]}`);
      }
      // The encoder written here from CONTRACT.md reproduces the vector.
      const enc = encodeQuantized(d.instance, d.frame, d.time, v.original.flat());
      assert.equal(enc.bytes.toString('hex'), v.hex, `${what}: re-encoded byte for byte`);
    } else {
      plain++;
      assert.equal(f.bounds, null, `${what}: no bounds`);
      assert.equal(encodePlain(d.instance, d.frame, d.time, d.positions.flat()).toString('hex'), v.hex, `${what}: re-encoded byte for byte`);
    }
  }
  const channels = doc.frames.filter((v) => 'flags' in v).length;
  assert.equal(plain + quantized + channels, doc.frames.length, 'every vector was checked');
  assert.ok(plain >= 4, 'the four plain vectors of PROTOCOL.md are there');
  t.diagnostic(`checked ${plain} plain and ${quantized} quantized vectors`);
});

test('the channel vectors decode their velocities and normals', (t) => {
  const doc = JSON.parse(fs.readFileSync(VECTORS_PATH, 'utf8'));
  const seen = new Set();
  for (const [index, v] of doc.frames.entries()) {
    if (!('flags' in v)) {
      assert.equal(decodeFrame(Buffer.from(v.hex, 'hex')).velocities, null);
      continue;
    }
    const what = `vector ${index + 1} (${v.note})`;
    const bytes = Buffer.from(v.hex, 'hex');
    const f = decodeFrame(bytes);
    const d = v.decoded;
    seen.add(v.flags);
    assert.equal(f.flags, v.flags, `${what}: flags`);
    assert.equal(bytes.length, frameSizeFlags(f.count, f.flags), `${what}: length`);
    assertBitwiseEqual(f.positions, Float32Array.from(d.positions.flat()), `${what}: positions`);
    if (v.flags & FLAG_VELOCITIES) {
      assertBitwiseEqual(f.velocities, Float32Array.from(d.velocities.flat()), `${what}: velocities`);
      if (f.quantized) {
        assertBitwiseEqual(Float32Array.from(f.velocityBounds.min), Float32Array.from(d.velocityMin), `${what}: velocity min`);
        assertBitwiseEqual(Float32Array.from(f.velocityBounds.max), Float32Array.from(d.velocityMax), `${what}: velocity max`);
        const original = v.original.velocities.flat();
        for (let i = 0; i < original.length; i++) {
          const k = i % 3;
          const tol = (f.velocityBounds.max[k] - f.velocityBounds.min[k]) / 65535 / 2 + 1e-6;
          assert.ok(Math.abs(f.velocities[i] - Math.fround(original[i])) <= tol, `${what}: velocity ${i}`);
        }
      }
    } else {
      assert.equal(f.velocities, null, `${what}: no velocities`);
    }
    if (v.flags & FLAG_NORMALS) {
      assertBitwiseEqual(f.normals, Float32Array.from(d.normals.flat()), `${what}: normals`);
      const original = v.original.normals;
      for (let i = 0; i < original.length; i++) {
        const n = f.normals.subarray(3 * i, 3 * i + 3);
        if (original[i].every((c) => c === 0)) {
          assert.deepEqual(Array.from(n), [0, 0, 0], `${what}: normal ${i} is none`);
          continue;
        }
        assert.ok(Math.abs(Math.hypot(n[0], n[1], n[2]) - 1) <= 1e-6, `${what}: normal ${i} is unit`);
        for (let k = 0; k < 3; k++)
          assert.ok(Math.abs(n[k] - original[i][k]) <= 1e-4, `${what}: normal ${i} axis ${k}`);
      }
    } else {
      assert.equal(f.normals, null, `${what}: no normals`);
    }
  }
  assert.deepEqual([...seen].sort(), [2, 3, 4, 5, 6, 7], 'every channel form has a vector');
  t.diagnostic(`checked ${seen.size} channel vectors`);
});

test('octahedral normals: (0,0) is none, the corners are straight down', () => {
  assert.deepEqual(octahedralDecode(0, 0), [0, 0, 0]);
  assert.deepEqual(octahedralDecode(65535, 65535), [0, 0, -1]);
  const up = octahedralDecode(32768, 32768);
  assert.ok(up[2] > 0.99999 && Math.abs(Math.hypot(...up) - 1) < 1e-12);
});

// ---- quantized frames encoded here -------------------------------------

test('a quantized frame encoded here decodes within half a step of the box', () => {
  const random = rng(42);
  const count = 300;
  const flat = [];
  for (let i = 0; i < count; i++) flat.push(-3 + 7 * random(), 0.5 + 1.5 * random(), 0.25); // z is flat
  flat[3 * 7] = -1000.5; // a wide x box
  const original = Float32Array.from(flat);
  const { bytes, min, max } = encodeQuantized(0x10002, 2 ** 40 + 3, 12.5, flat);
  assert.equal(bytes.length, 64 + 6 * count);

  const f = decodeFrame(bytes);
  assert.equal(f.quantized, true);
  assert.equal(f.flags, FLAG_QUANTIZED);
  assert.equal(f.instance, 0x10002);
  assert.equal(f.frame, 2 ** 40 + 3);
  assert.equal(f.time, 12.5);
  assert.equal(f.count, count);
  assert.equal(f.view, false);
  assert.deepEqual(f.bounds.min, Array.from(min));
  assert.deepEqual(f.bounds.max, Array.from(max));
  for (let i = 0; i < original.length; i++) {
    const k = i % 3;
    const tol = (max[k] - min[k]) / 65535 / 2 + 1e-6;
    assert.ok(Math.abs(f.positions[i] - original[i]) <= tol, `coordinate ${i}: ${f.positions[i]} vs ${original[i]} (tolerance ${tol})`);
  }
  // The box's corners and a flat axis come back exactly.
  for (let k = 0; k < 3; k++) {
    const axis = Array.from(f.positions).filter((_, i) => i % 3 === k);
    assert.equal(Math.min(...axis), min[k], `axis ${k}: min exact`);
    assert.equal(Math.max(...axis), max[k], `axis ${k}: max exact`);
  }
  assert.ok(f.positions.filter((_, i) => i % 3 === 2).every((z) => z === Math.fround(0.25)), 'flat axis decodes to min');
});

test('a quantized frame of no particles is 64 bytes', () => {
  const { bytes } = encodeQuantized(4, 1, 3.25, []);
  assert.equal(bytes.length, 64);
  const f = decodeFrame(bytes);
  assert.equal(f.count, 0);
  assert.equal(f.positions.length, 0);
  assert.equal(f.quantized, true);
});

// ---- rejections ----------------------------------------------------------

function rejects(bytes, pattern) {
  assert.throws(
    () => decodeFrame(bytes),
    (err) => {
      assert.ok(err instanceof ProtocolError, `a ProtocolError, got ${err}`);
      assert.equal(err.code, 'protocol_error');
      assert.match(err.message, pattern);
      return true;
    },
  );
}

test('the decoder rejects bad magic, versions, flags and lengths', () => {
  const good = encodePlain(1, 0, 0, [0, 1, 2, 3, 4, 5]);
  assert.doesNotThrow(() => decodeFrame(good));
  const q = encodeQuantized(1, 0, 0, [0, 1, 2, 3, 4, 5]).bytes;
  assert.doesNotThrow(() => decodeFrame(q));

  let b = Buffer.from(good);
  b[1] = 0x44;
  rejects(b, /bad magic/);
  b = Buffer.from(good);
  b.writeUInt16LE(2, 4);
  rejects(b, /unsupported version 2/);
  // A channel flag on a frame without its channel: the length is wrong.
  for (const flags of [FLAG_VELOCITIES, FLAG_NORMALS]) {
    const b = encodePlain(1, 0, 0, [0, 0, 0, 0.1, 0, 0]);
    b.writeUInt16LE(flags, 6);
    rejects(b, /does not match/);
  }
  for (const flags of [0x10, 0x11, 0x8000, 0x8001]) {
    b = Buffer.from(good);
    b.writeUInt16LE(flags, 6);
    rejects(b, /unknown flags/);
  }
  // Bit 3 is a shared-memory reference, which only a Client with the ring resolves.
  for (const flags of [8, 9]) {
    b = Buffer.from(good);
    b.writeUInt16LE(flags, 6);
    rejects(b, /a shared-memory reference \(flags bit 3\) to frame \d+ of instance \d+, not a frame/);
  }
  // Plain bytes marked quantized: the length no longer matches the count.
  b = Buffer.from(good);
  b.writeUInt16LE(FLAG_QUANTIZED, 6);
  rejects(b, /length 64 does not match 2 particles/);
  // Quantized bytes with the flag cleared.
  b = Buffer.from(q);
  b.writeUInt16LE(0, 6);
  rejects(b, /does not match/);
  // A count that disagrees with the length.
  b = Buffer.from(good);
  b.writeUInt32LE(3, 32);
  rejects(b, /does not match 3 particles/);
  b = Buffer.from(q);
  b.writeUInt32LE(1, 32);
  rejects(b, /does not match 1 particles/);
  // Consistent header, wrong number of bytes.
  rejects(good.subarray(0, good.length - 1), /header says 64 bytes, got 63/);
  rejects(Buffer.concat([good, Buffer.alloc(4)]), /header says 64 bytes, got 68/);
  rejects(good.subarray(0, 39), /shorter than the 40-byte header/);
  assert.throws(() => decodeFrame('not bytes'), TypeError);
});

// ---- views and copies ----------------------------------------------------

test('plain positions are a view when aligned and a copy otherwise', () => {
  const frame = encodePlain(9, 5, 0.25, [1.5, -2, 3, 4, 5, 6.25]);
  const aligned = Buffer.from(new ArrayBuffer(frame.length + 8), 8, frame.length);
  frame.copy(aligned);
  const v = decodeFrame(aligned);
  assert.equal(v.view, true);
  assert.equal(v.positions.buffer, aligned.buffer, 'no copy');
  assert.deepEqual(Array.from(v.positions), [1.5, -2, 3, 4, 5, 6.25]);

  const odd = Buffer.from(new ArrayBuffer(frame.length + 3), 3, frame.length);
  frame.copy(odd);
  const c = decodeFrame(odd);
  assert.equal(c.view, false);
  assert.notEqual(c.positions.buffer, odd.buffer);
  assert.deepEqual(Array.from(c.positions), [1.5, -2, 3, 4, 5, 6.25]);

  const forced = decodeFrame(aligned, { copy: true });
  assert.equal(forced.view, false);
  assert.notEqual(forced.positions.buffer, aligned.buffer);
  assertBitwiseEqual(forced.positions, v.positions, 'forced copy');
});

test('every form decodes into the caller\'s arrays in place, from any binary form', () => {
  const doc = JSON.parse(fs.readFileSync(VECTORS_PATH, 'utf8'));
  for (const [index, v] of doc.frames.entries()) {
    const what = `vector ${index + 1} (${v.note})`;
    const bytes = Buffer.from(v.hex, 'hex');
    const want = decodeFrame(bytes, { copy: true });
    const n3 = 3 * want.count;
    const into = { positions: new Float32Array(n3), velocities: new Float32Array(n3), normals: new Float32Array(n3) };
    // An ArrayBuffer of its own (a browser WebSocket's message) and a
    // DataView: the same values.
    const own = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    for (const data of [own, new DataView(own)]) {
      const got = decodeFrame(data, into);
      assert.equal(got.positions, into.positions, `${what}: positions in place`);
      assert.equal(got.view, false, `${what}: not a view`);
      assertBitwiseEqual(got.positions, want.positions, `${what}: positions`);
      for (const name of ['velocities', 'normals']) {
        if (want[name] === null) {
          assert.equal(got[name], null, `${what}: no ${name}`);
          continue;
        }
        assert.equal(got[name], into[name], `${what}: ${name} in place`);
        assertBitwiseEqual(got[name], want[name], `${what}: ${name}`);
      }
      assert.deepEqual(decodeHeader(data), decodeHeader(bytes), `${what}: header`);
    }
    // A target of another length is not written: a new array.
    const short = new Float32Array(n3 + 3);
    const fresh = decodeFrame(bytes, { positions: short });
    assert.notEqual(fresh.positions, short);
    assert.ok(short.every((x) => x === 0), `${what}: the wrong-sized target is untouched`);
  }
  const h = decodeHeader(encodePlain(9, 2 ** 40 + 7, 0.5, [1, 2, 3]));
  assert.deepEqual(h, { version: 1, flags: 0, quantized: false, length: 52, instance: 9,
                        frame: 2 ** 40 + 7, time: 0.5, count: 1 });
  assert.throws(() => decodeHeader(new Uint8Array(39)), ProtocolError);
  assert.throws(() => decodeFrame('not bytes'), TypeError);
});

// ---- the stream parser -----------------------------------------------------

test('the stream parser splits lines and frames at every chunk boundary', () => {
  const f1 = encodePlain(1, 0, 0, [0, 0, 0, 0.1, 0, 0]);
  const f2 = encodeQuantized(2, 7, 0.5, [1, 2, 3, 4, 5, 6, 7, 8, 9]).bytes;
  const f3 = encodePlain(3, 1, 3.25, []);
  const parts = [
    Buffer.from('{"id":1,"ok":true}\n'),
    f1,
    Buffer.from('{"event":"debug","enabled":true}\n'),
    f2,
    f3,
    Buffer.from('{"id":2,"ok":false,"error":{"code":"not_found","message":"x"}}\n'),
    f1,
  ];
  const stream = Buffer.concat(parts);
  const expected = parts.map((p) => (p[0] === 0x89 ? { kind: 'frame', hex: p.toString('hex') } : { kind: 'line', hex: p.subarray(0, -1).toString('hex') }));

  for (let size = 1; size <= stream.length; size++) {
    const parser = new MessageParser();
    const got = [];
    for (let off = 0; off < stream.length; off += size) {
      for (const m of parser.push(stream.subarray(off, off + size))) got.push({ kind: m.kind, hex: Buffer.from(m.bytes).toString('hex') });
    }
    assert.deepEqual(got, expected, `chunk size ${size}`);
    assert.ok(parser.idle, `chunk size ${size}: nothing left over`);
  }
  // A frame split across chunks is reassembled in a buffer of its own at offset 0.
  const parser = new MessageParser();
  assert.deepEqual(parser.push(f1.subarray(0, 50)), []);
  const [m] = parser.push(f1.subarray(50));
  assert.equal(m.bytes.byteOffset, 0);
  assert.equal(decodeFrame(m.bytes).view, true);
});

test('the stream parser rejects a message that starts with neither { nor 0x89', () => {
  const parser = new MessageParser();
  assert.throws(() => parser.push(Buffer.from('[1]\n')), (err) => err instanceof ProtocolError && /unexpected byte 0x5b/.test(err.message));
  const p2 = new MessageParser();
  const bad = encodePlain(1, 0, 0, []);
  bad[2] = 0;
  assert.throws(() => p2.push(bad), /bad magic/);
  const p3 = new MessageParser(1000);
  const big = encodePlain(1, 0, 0, new Array(300).fill(1));
  assert.throws(() => p3.push(big), /exceeds the limit of 1000 bytes/);
});
