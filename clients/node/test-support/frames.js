'use strict';
// Helpers the frame tests share: a reference encoder of a frame's header
// (written from PROTOCOL.md), a float array's bytes for bitwise
// comparison, and the first `n` frames of a client's frame iterator.

const { FRAME_HEADER_SIZE } = require('..');

/** A frame's 40-byte header. */
function header(flags, length, instance, frame, time, count) {
  const b = Buffer.alloc(FRAME_HEADER_SIZE);
  b.set([0x89, 0x43, 0x4c, 0x46], 0);
  b.writeUInt16LE(1, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(length, 8);
  b.writeUInt32LE(instance, 12);
  b.writeBigUInt64LE(BigInt(frame), 16);
  b.writeDoubleLE(time, 24);
  b.writeUInt32LE(count, 32);
  b.writeUInt32LE(0, 36);
  return b;
}

/** The bytes of a Float32Array (or any typed array), for `.equals`. */
function bytesOf(f32) {
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
}

/** Takes `n` frames from an iterator, failing after `ms`. */
async function take(iterator, n, ms = 5000) {
  const out = [];
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`only ${out.length} of ${n} frames within ${ms} ms`)), ms);
  });
  try {
    while (out.length < n) {
      const r = await Promise.race([iterator.next(), timeout]);
      if (r.done) throw new Error(`iterator ended after ${out.length} of ${n} frames`);
      out.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

module.exports = { header, bytesOf, take };
