'use strict';
// Helpers the frame tests share: a float array's bytes for bitwise
// comparison, and the first `n` frames of a client's frame iterator.

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

module.exports = { bytesOf, take };
