'use strict';
// Binary frames (PROTOCOL.md, Frames): a 40-byte little-endian header, then
// either f32[3N] positions (flags 0) or, with flags bit 0 (subscribe's
// "quantize"), f32[3] bbox min, f32[3] bbox max and u16[3N] positions.
// Subscribe's "channels" add after them each particle's velocity (flags bit
// 1: f32[3N], or quantized a box and u16[3N]) and unit normal (bit 2:
// f32[3N], or quantized u16[2N] octahedral).
//
// The one decoder of clothd's JavaScript: the viewer's page runs this file
// too (clients/viewer/public/frame.js imports it; the viewer's server hands
// it to the browser as an ES module). So it needs nothing of Node: typed
// arrays and DataView only, and errors.js for ProtocolError.

const { ProtocolError } = require('./errors.js');

const FRAME_MAGIC = Object.freeze([0x89, 0x43, 0x4c, 0x46]); // 0x89 'C' 'L' 'F'
const FRAME_VERSION = 1;
const FRAME_HEADER_SIZE = 40;
/** flags bit 0: the payload is quantized (bounding box + u16 per axis). */
const FLAG_QUANTIZED = 1;
/** flags bit 1: velocities follow the positions (channel "velocities"). */
const FLAG_VELOCITIES = 2;
/** flags bit 2: unit normals follow (channel "normals"). */
const FLAG_NORMALS = 4;
const FLAGS_KNOWN = FLAG_QUANTIZED | FLAG_VELOCITIES | FLAG_NORMALS;
/**
 * flags bit 3: the message is a reference to a frame in the server's
 * shared-memory ring (subscribe's "shm"), never a frame itself.
 */
const FLAG_SHARED = 8;
/** A reference's length: the frame's header, u64 position, u32 length, u32 reserved. */
const SHM_REFERENCE_SIZE = 56;
/** What subscribe's `channels` may name ("positions" is always sent). */
const CHANNELS = Object.freeze(['positions', 'velocities', 'normals']);
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

/**
 * Where each part lies (byte offsets from the frame's start): positions,
 * then velocities (bit 1), then normals (bit 2); `end` is the length.
 */
function sections(flags, count) {
  const quantized = (flags & FLAG_QUANTIZED) !== 0;
  const xyz = quantized ? QUANTIZED_PREFIX + 6 * count : 12 * count;
  let at = FRAME_HEADER_SIZE + xyz;
  const out = { positions: FRAME_HEADER_SIZE, velocities: -1, normals: -1, end: 0 };
  if (flags & FLAG_VELOCITIES) {
    out.velocities = at;
    at += xyz;
  }
  if (flags & FLAG_NORMALS) {
    out.normals = at;
    at += (quantized ? 4 : 12) * count;
  }
  out.end = at;
  return out;
}

/** Total length of a frame of `count` particles with `flags`. */
function frameSizeFlags(count, flags) {
  return sections(flags, count).end;
}

function hex2(b) {
  return b.toString(16).padStart(2, '0');
}

/** A Uint8Array over `data` (a Uint8Array or Buffer, another typed array or an ArrayBuffer). */
function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('frame: expected a Uint8Array, Buffer or ArrayBuffer');
}

// The u64 frame number of a header as a double: exact up to 2^53 (a
// million years of steps at 60 Hz is 2^41).
function frameNumber(dv) {
  return dv.getUint32(20, true) * 4294967296 + dv.getUint32(16, true);
}

/**
 * Reads and checks a shared-memory reference (exactly 56 bytes, flags bit
 * 3): { instance, frame, flags (the frame's: without bit 3), count,
 * position (a BigInt: the frame's running byte position in the ring),
 * length (the frame's length) }. Throws ProtocolError when it names no
 * frame of its header's particles and flags.
 */
function decodeReference(data) {
  const bytes = toBytes(data);
  if (bytes.length !== SHM_REFERENCE_SIZE)
    throw new ProtocolError(`frame: a shared-memory reference of ${bytes.length} bytes (a reference is ${SHM_REFERENCE_SIZE})`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, SHM_REFERENCE_SIZE);
  const flags = dv.getUint16(6, true) & ~FLAG_SHARED;
  const count = dv.getUint32(32, true);
  const length = dv.getUint32(48, true);
  const reserved = dv.getUint32(52, true);
  if (dv.getUint16(4, true) !== FRAME_VERSION || dv.getUint32(8, true) !== SHM_REFERENCE_SIZE)
    throw new ProtocolError(`frame: a shared-memory reference of version ${dv.getUint16(4, true)}, length ${dv.getUint32(8, true)}`);
  if (reserved !== 0 || (flags & ~FLAGS_KNOWN) || length !== frameSizeFlags(count, flags)) {
    throw new ProtocolError(`frame: a shared-memory reference to ${length} bytes (reserved ${reserved}) does not ` +
      `match ${count} particles with flags 0x${flags.toString(16).padStart(4, '0')}`);
  }
  return {
    instance: dv.getUint32(12, true),
    frame: frameNumber(dv),
    flags,
    count,
    position: dv.getBigUint64(40, true),
    length,
  };
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
  if (flags & FLAG_SHARED) {
    throw new ProtocolError(`frame: a shared-memory reference (flags bit 3) to frame ${frameNumber(dv)} of instance ` +
      `${dv.getUint32(12, true)}, not a frame: the frame is in the server's ring, which a Client subscribed ` +
      'with {shm: true} reads');
  }
  if (flags & ~FLAGS_KNOWN)
    throw new ProtocolError(`frame: unknown flags 0x${(flags & ~FLAGS_KNOWN).toString(16).padStart(4, '0')}`);
  const quantized = (flags & FLAG_QUANTIZED) !== 0;
  const expected = frameSizeFlags(count, flags);
  if (length !== expected)
    throw new ProtocolError(`frame: length ${length} does not match ${count} particles (${expected} bytes${quantized ? ', quantized' : ''})`);
  if (length !== available)
    throw new ProtocolError(`frame: header says ${length} bytes, got ${available}`);
  const frame = frameNumber(dv);
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

/**
 * The header of one complete frame (exactly its `length` bytes, any binary
 * form): { version, flags, quantized, length, instance, frame, time, count }.
 * Throws ProtocolError as decodeFrame does.
 */
function decodeHeader(data) {
  const bytes = toBytes(data);
  return readHeader(bytes, bytes.length);
}

/**
 * f32[3N] at `offset` -> Float32Array: into `target` (3N floats) when
 * given, else a view when aligned (see decodeFrame) and `copy` is false,
 * else a copy.
 */
function plainTriplets(bytes, offset, count, copy, target) {
  const n = 3 * count;
  const start = bytes.byteOffset + offset;
  if (LITTLE_ENDIAN_HOST && !copy && !target && start % 4 === 0)
    return { values: new Float32Array(bytes.buffer, start, n), view: true };
  const out = target || new Float32Array(n);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(out.buffer).set(bytes.subarray(offset, offset + 4 * n));
  } else {
    const dv = new DataView(bytes.buffer, start, 4 * n);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  }
  return { values: out, view: false };
}

/**
 * A box and u16[3N] at `offset` -> Float32Array (`target` when given): v
 * = min + (q / 65535) * (max - min), computed in float64 and rounded to
 * float32 (the test vectors' rule). Positions and quantized velocities
 * alike.
 */
function boxedTriplets(bytes, offset, count, target) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const min = [0, 0, 0];
  const max = [0, 0, 0];
  for (let k = 0; k < 3; k++) {
    min[k] = dv.getFloat32(offset + 4 * k, true);
    max[k] = dv.getFloat32(offset + 12 + 4 * k, true);
  }
  const range = [max[0] - min[0], max[1] - min[1], max[2] - min[2]];
  const out = target || new Float32Array(3 * count);
  let p = offset + QUANTIZED_PREFIX;
  for (let i = 0; i < 3 * count; i += 3) {
    for (let k = 0; k < 3; k++, p += 2)
      out[i + k] = min[k] + (dv.getUint16(p, true) / 65535) * range[k];
  }
  return { values: out, bounds: { min, max } };
}

/**
 * One quantized normal (u16 u, v: octahedral) -> unit x, y, z in float64
 * at out[at..at+2] (PROTOCOL.md, Quantized frames); (0, 0) is no normal:
 * (0, 0, 0). No allocation: a frame's normals decode in a loop of these.
 */
function octahedralInto(qu, qv, out, at) {
  if (qu === 0 && qv === 0) {
    out[at] = out[at + 1] = out[at + 2] = 0;
    return;
  }
  let x = (qu / 65535) * 2 - 1;
  let y = (qv / 65535) * 2 - 1;
  const z = 1 - Math.abs(x) - Math.abs(y);
  if (z < 0) {
    const fx = (1 - Math.abs(y)) * (x >= 0 ? 1 : -1);
    const fy = (1 - Math.abs(x)) * (y >= 0 ? 1 : -1);
    x = fx;
    y = fy;
  }
  const len = Math.sqrt(x * x + y * y + z * z);
  out[at] = x / len;
  out[at + 1] = y / len;
  out[at + 2] = z / len;
}

/** One quantized normal (u16 u, v) -> unit [x, y, z] in float64. */
function octahedralDecode(qu, qv) {
  const n = [0, 0, 0];
  octahedralInto(qu, qv, n, 0);
  return n;
}

function octahedralNormals(bytes, offset, count, target) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out = target || new Float32Array(3 * count);
  for (let i = 0; i < count; i++)
    octahedralInto(dv.getUint16(offset + 4 * i, true), dv.getUint16(offset + 4 * i + 2, true), out, 3 * i);
  return out;
}

/**
 * Decodes one complete frame (header + payload, exactly `length` bytes; a
 * Uint8Array or Buffer, another typed array or an ArrayBuffer).
 *
 * Returns a Frame: { instance, frame, time, count, flags, quantized,
 * positions: Float32Array (x0, y0, z0, x1, ...), bounds, view,
 * velocities, velocityBounds, normals }. `velocities` and `normals` are
 * Float32Arrays like `positions` when the frame carries them (flags bits 1
 * and 2, subscribe's `channels`), else null; normals are unit, or (0, 0, 0)
 * for a particle no triangle touches. `velocityBounds` is a quantized
 * frame's velocity box ({min, max}), else null.
 *
 * Plain frames: `positions` is a view on `bytes` (no copy) when the payload
 * starts at a 4-byte-aligned address on a little-endian host, else a copy;
 * `view` tells which. `options.copy` forces a copy. Quantized frames are
 * always decoded into a new array and carry `bounds` ({min, max}, the
 * bounding box as float32 values); `bounds` is null for plain frames.
 * `options.positions`, `options.velocities`, `options.normals`: Float32Arrays
 * of 3N floats to decode into in place (a renderer's vertex buffers); one of
 * another length is left alone and a new array returned.
 *
 * Throws ProtocolError on a bad magic, a version other than 1, a flag bit
 * other than bits 0-2 (bit 3, a shared-memory reference, is resolved by the
 * Client that holds the ring: decodeFrame says what it is), or a length
 * that does not match the flags, the count or the bytes.
 */
function decodeFrame(data, options) {
  const bytes = toBytes(data);
  const h = readHeader(bytes, bytes.length);
  const o = options || {};
  const copy = Boolean(o.copy);
  // A caller's array of the right length, else null (a new array).
  const into = (t) => (t instanceof Float32Array && t.length === 3 * h.count ? t : null);
  const at = sections(h.flags, h.count);
  let positions;
  let bounds = null;
  let view = false;
  let velocities = null;
  let velocityBounds = null;
  let normals = null;
  if (h.quantized) {
    ({ values: positions, bounds } = boxedTriplets(bytes, at.positions, h.count, into(o.positions)));
    if (at.velocities >= 0)
      ({ values: velocities, bounds: velocityBounds } =
        boxedTriplets(bytes, at.velocities, h.count, into(o.velocities)));
    if (at.normals >= 0) normals = octahedralNormals(bytes, at.normals, h.count, into(o.normals));
  } else {
    ({ values: positions, view } = plainTriplets(bytes, at.positions, h.count, copy, into(o.positions)));
    if (at.velocities >= 0)
      velocities = plainTriplets(bytes, at.velocities, h.count, copy, into(o.velocities)).values;
    if (at.normals >= 0)
      normals = plainTriplets(bytes, at.normals, h.count, copy, into(o.normals)).values;
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
    velocities,
    velocityBounds,
    normals,
  };
}

module.exports = {
  ProtocolError, // what the decoder throws (errors.js)
  FRAME_MAGIC,
  FRAME_VERSION,
  FRAME_HEADER_SIZE,
  FLAG_QUANTIZED,
  FLAG_VELOCITIES,
  FLAG_NORMALS,
  FLAGS_KNOWN,
  FLAG_SHARED,
  SHM_REFERENCE_SIZE,
  CHANNELS,
  QUANTIZED_PREFIX,
  LITTLE_ENDIAN_HOST,
  frameSize,
  quantizedFrameSize,
  frameSizeFlags,
  octahedralDecode,
  decodeHeader,
  decodeFrame,
  decodeReference,
};
