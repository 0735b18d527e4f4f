// The page's frame decoder (public/frame.js: the Node client's decoder with
// the page's calling convention) against the shared test vectors of
// protocol/test_vectors.json (positions, velocities and normals, plain and
// quantized), and against frames this test encodes. The browser runs the
// same file through the viewer's server (viewer.test.mjs, channels.test.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeFrame, decodeHeader, FrameError } from '../public/frame.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const VECTORS = path.resolve(HERE, '../../../protocol/test_vectors.json');

const f32 = Math.fround;

// Encodes positions (flat array) as a frame; quantized as PROTOCOL.md says.
function encode({ instance = 1, frame = 0, time = 0, positions, quantize = false }) {
  const n = positions.length / 3;
  const length = quantize ? 64 + 6 * n : 40 + 12 * n;
  const b = Buffer.alloc(length);
  b.set([0x89, 0x43, 0x4c, 0x46]);
  b.writeUInt16LE(1, 4);
  b.writeUInt16LE(quantize ? 1 : 0, 6);
  b.writeUInt32LE(length, 8);
  b.writeUInt32LE(instance, 12);
  b.writeBigUInt64LE(BigInt(frame), 16);
  b.writeDoubleLE(time, 24);
  b.writeUInt32LE(n, 32);
  if (!quantize) {
    positions.forEach((p, i) => b.writeFloatLE(p, 40 + 4 * i));
    return b;
  }
  const min = [0, 1, 2].map((a) => (n ? Math.min(...positions.filter((_, i) => i % 3 === a).map(f32)) : 0));
  const max = [0, 1, 2].map((a) => (n ? Math.max(...positions.filter((_, i) => i % 3 === a).map(f32)) : 0));
  min.forEach((v, a) => b.writeFloatLE(v, 40 + 4 * a));
  max.forEach((v, a) => b.writeFloatLE(v, 52 + 4 * a));
  positions.forEach((p, i) => {
    const a = i % 3;
    const range = max[a] - min[a];
    let q = range > 0 ? Math.round(((f32(p) - min[a]) / range) * 65535) : 0;
    q = Math.min(Math.max(q, 0), 65535);
    b.writeUInt16LE(q, 64 + 2 * i);
  });
  return b;
}

test('decodes every shared test vector (plain and quantized, with channels)', () => {
  const vectors = JSON.parse(fs.readFileSync(VECTORS, 'utf8'));
  assert.ok(vectors.frames.length >= 4, 'test vectors present');
  for (const v of vectors.frames) {
    const buf = Buffer.from(v.hex, 'hex');
    const got = decodeFrame(buf);
    const want = v.decoded;
    assert.equal(got.instance, want.instance, v.note);
    assert.equal(got.frame, want.frame, v.note);
    assert.equal(got.time, want.time, v.note);
    assert.equal(got.count, want.positions.length, v.note);
    assert.equal(got.quantized, !!v.quantized, v.note);
    assert.equal(got.flags, v.flags ?? (v.quantized ? 1 : 0), v.note);
    want.positions.flat().forEach((p, i) => assert.equal(got.positions[i], f32(p), `${v.note} [${i}]`));
    for (const name of ['velocities', 'normals']) {
      if (!want[name]) {
        assert.equal(got[name], null, `${v.note}: no ${name}`);
        continue;
      }
      want[name].flat().forEach((c, i) => assert.equal(got[name][i], f32(c), `${v.note} ${name}[${i}]`));
    }
    if (v.quantized && want.velocityMin) {
      assert.deepEqual(got.velocityMin, want.velocityMin.map(f32), v.note);
      assert.deepEqual(got.velocityMax, want.velocityMax.map(f32), v.note);
    }
    if (v.quantized) {
      assert.deepEqual(got.bboxMin, want.bboxMin.map(f32), v.note);
      assert.deepEqual(got.bboxMax, want.bboxMax.map(f32), v.note);
    }
  }
});

test('the channel vectors cover every form, into caller arrays', () => {
  const vectors = JSON.parse(fs.readFileSync(VECTORS, 'utf8'));
  const forms = new Set(vectors.frames.map((v) => v.flags ?? (v.quantized ? 1 : 0)));
  assert.deepEqual([...forms].sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
  const v = vectors.frames.find((f) => f.flags === 7);
  const n3 = 3 * v.decoded.positions.length;
  const into = { velocities: new Float32Array(n3), normals: new Float32Array(n3) };
  const got = decodeFrame(Buffer.from(v.hex, 'hex'), null, into);
  assert.equal(got.velocities, into.velocities);
  assert.equal(got.normals, into.normals);
  for (let i = 0; i < n3; i += 3) {
    assert.ok(Math.abs(Math.hypot(got.normals[i], got.normals[i + 1], got.normals[i + 2]) - 1) < 1e-6);
  }
});

test('quantized frames decode within half a step of the encoded positions', () => {
  const positions = [];
  for (let i = 0; i < 200; i++) positions.push(Math.sin(i) * 1.3, 2 - i * 0.01, Math.cos(i * 0.7) * 0.4);
  const got = decodeFrame(encode({ instance: 3, frame: 2 ** 40 + 5, time: 1.25, positions, quantize: true }));
  assert.equal(got.frame, 2 ** 40 + 5);
  for (let a = 0; a < 3; a++) {
    const tol = (got.bboxMax[a] - got.bboxMin[a]) / 65535 / 2 + 1e-6;
    for (let i = a; i < positions.length; i += 3) {
      assert.ok(Math.abs(got.positions[i] - positions[i]) <= tol, `coordinate ${i}: ${got.positions[i]} vs ${positions[i]}`);
    }
  }
});

test('decodes into a caller array in place', () => {
  const out = new Float32Array(6);
  const got = decodeFrame(encode({ positions: [1, 2, 3, 4, 5, 6] }), out);
  assert.equal(got.positions, out);
  assert.deepEqual([...out], [1, 2, 3, 4, 5, 6]);
  // Unaligned input (a frame inside a bigger buffer at an odd offset).
  const frame = encode({ positions: [1.5, -2, 3], quantize: false });
  const big = Buffer.alloc(frame.length + 3);
  frame.copy(big, 3);
  assert.deepEqual([...decodeFrame(big.subarray(3)).positions], [1.5, -2, 3]);
});

test('rejects bad magic, versions, unknown flags and wrong lengths', () => {
  const good = encode({ positions: [0, 0, 0, 1, 1, 1] });
  const bad = (mutate) => {
    const b = Buffer.from(good);
    mutate(b);
    return b;
  };
  assert.ok(FrameError.prototype instanceof Error, 'the decoder\'s error class');
  assert.throws(() => decodeHeader(good.subarray(0, 39)), FrameError);
  assert.throws(() => decodeHeader(bad((b) => { b[1] = 0; })), /magic/);
  assert.throws(() => decodeHeader(bad((b) => b.writeUInt16LE(2, 4))), /version/);
  assert.throws(() => decodeHeader(bad((b) => b.writeUInt16LE(8, 6))), /flags/);
  assert.throws(() => decodeHeader(bad((b) => b.writeUInt16LE(2, 6))), /length/); // velocities flag, none there
  assert.throws(() => decodeHeader(bad((b) => b.writeUInt16LE(1, 6))), /length/); // quantized flag, plain length
  assert.throws(() => decodeHeader(bad((b) => b.writeUInt32LE(3, 32))), /length/);
  assert.throws(() => decodeHeader(good.subarray(0, good.length - 1)), FrameError);
});
