'use strict';
// Binary frames (PROTOCOL.md, Frames): a 40-byte little-endian header, then
// either f32[3N] positions (flags 0) or, with flags bit 0 (subscribe's
// "quantize"), f32[3] bbox min, f32[3] bbox max and u16[3N] positions.

const { ProtocolError } = require('./errors.js');

const FRAME_MAGIC = Object.freeze([0x89, 0x43, 0x4c, 0x46]); // 0x89 'C' 'L' 'F'
const FRAME_VERSION = 1;
const FRAME_HEADER_SIZE = 40;
/** flags bit 0: the payload is quantized (bounding box + u16 per axis). */
const FLAG_QUANTIZED = 1;
/** Bytes between the header and a quantized frame's u16 positions. */
const QUANTIZED_PREFIX = 24;

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Total length of a plain frame of `count` particles. */
function frameSize(count) {
  return FRAME_HEADER_SIZE + 12 * count;
}

/** Total length of a quantized frame of `count` particles. */
function quantizedFrameSize(count) {
  return FRAME_HEADER_SIZE + QUANTIZED_PREFIX + 6 * count;
}

function hex2(b) {
  return b.toString(16).padStart(2, '0');
}

/**
 * Reads and checks a frame header. `bytes` must hold at least the 40-byte
 * header; `available` is how many bytes of the frame the caller has (the
 * header's length must equal it). Throws ProtocolError.
 */
function readHeader(bytes, available) {
  if (!(bytes instanceof Uint8Array))
    throw new TypeError('frame: expected a Uint8Array or Buffer');
  if (bytes.length < FRAME_HEADER_SIZE)
    throw new ProtocolError(`frame: ${bytes.length} bytes, shorter than the ${FRAME_HEADER_SIZE}-byte header`);
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== FRAME_MAGIC[i]) {
      const got = Array.from(bytes.subarray(0, 4), hex2).join(' ');
      throw new ProtocolError(`frame: bad magic ${got} (expected 89 43 4c 46)`);
    }
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, FRAME_HEADER_SIZE);
  const version = dv.getUint16(4, true);
  const flags = dv.getUint16(6, true);
  const length = dv.getUint32(8, true);
  const count = dv.getUint32(32, true);
  if (version !== FRAME_VERSION)
    throw new ProtocolError(`frame: unsupported version ${version} (expected ${FRAME_VERSION})`);
  if (flags & ~FLAG_QUANTIZED)
    throw new ProtocolError(`frame: unknown flags 0x${(flags & ~FLAG_QUANTIZED).toString(16).padStart(4, '0')}`);
  const quantized = (flags & FLAG_QUANTIZED) !== 0;
  const expected = quantized ? quantizedFrameSize(count) : frameSize(count);
  if (length !== expected)
    throw new ProtocolError(`frame: length ${length} does not match ${count} particles (${expected} bytes${quantized ? ', quantized' : ''})`);
  if (length !== available)
    throw new ProtocolError(`frame: header says ${length} bytes, got ${available}`);
  // The u64 frame number as a double: exact up to 2^53 (a million years of
  // steps at 60 Hz is 2^41).
  const frame = dv.getUint32(20, true) * 4294967296 + dv.getUint32(16, true);
  return {
    version,
    flags,
    quantized,
    length,
    instance: dv.getUint32(12, true),
    frame,
    time: dv.getFloat64(24, true),
    count,
  };
}

/** Plain payload -> Float32Array, a view when aligned (see decodeFrame). */
function plainPositions(bytes, count, copy) {
  const n = 3 * count;
  const start = bytes.byteOffset + FRAME_HEADER_SIZE;
  if (LITTLE_ENDIAN_HOST && !copy && start % 4 === 0)
    return { positions: new Float32Array(bytes.buffer, start, n), view: true };
  const out = new Float32Array(n);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(out.buffer).set(bytes.subarray(FRAME_HEADER_SIZE, FRAME_HEADER_SIZE + 4 * n));
  } else {
    const dv = new DataView(bytes.buffer, start, 4 * n);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  }
  return { positions: out, view: false };
}

/**
 * Quantized payload -> Float32Array: p = min + (q / 65535) * (max - min),
 * computed in float64 and rounded to float32 (the test vectors' rule).
 */
function quantizedPositions(bytes, count) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const min = [0, 0, 0];
  const max = [0, 0, 0];
  for (let k = 0; k < 3; k++) {
    min[k] = dv.getFloat32(FRAME_HEADER_SIZE + 4 * k, true);
    max[k] = dv.getFloat32(FRAME_HEADER_SIZE + 12 + 4 * k, true);
  }
  const range = [max[0] - min[0], max[1] - min[1], max[2] - min[2]];
  const out = new Float32Array(3 * count);
  let p = FRAME_HEADER_SIZE + QUANTIZED_PREFIX;
  for (let i = 0; i < 3 * count; i += 3) {
    for (let k = 0; k < 3; k++, p += 2)
      out[i + k] = min[k] + (dv.getUint16(p, true) / 65535) * range[k];
  }
  return { positions: out, bounds: { min, max } };
}

/**
 * Decodes one complete frame (header + payload, exactly `length` bytes).
 *
 * Returns a Frame: { instance, frame, time, count, flags, quantized,
 * positions: Float32Array (x0, y0, z0, x1, ...), bounds, view }.
 *
 * Plain frames: `positions` is a view on `bytes` (no copy) when the payload
 * starts at a 4-byte-aligned address on a little-endian host, else a copy;
 * `view` tells which. `options.copy` forces a copy. Quantized frames are
 * always decoded into a new array and carry `bounds` ({min, max}, the
 * bounding box as float32 values); `bounds` is null for plain frames.
 *
 * Throws ProtocolError on a bad magic, a version other than 1, a flag bit
 * other than bit 0, or a length that does not match the count or the bytes.
 */
function decodeFrame(bytes, options) {
  const h = readHeader(bytes, bytes && bytes.length);
  const copy = Boolean(options && options.copy);
  let positions;
  let bounds = null;
  let view = false;
  if (h.quantized) {
    ({ positions, bounds } = quantizedPositions(bytes, h.count));
  } else {
    ({ positions, view } = plainPositions(bytes, h.count, copy));
  }
  return {
    instance: h.instance,
    frame: h.frame,
    time: h.time,
    count: h.count,
    flags: h.flags,
    quantized: h.quantized,
    positions,
    bounds,
    view,
  };
}

module.exports = {
  FRAME_MAGIC,
  FRAME_VERSION,
  FRAME_HEADER_SIZE,
  FLAG_QUANTIZED,
  QUANTIZED_PREFIX,
  LITTLE_ENDIAN_HOST,
  frameSize,
  quantizedFrameSize,
  decodeFrame,
};
