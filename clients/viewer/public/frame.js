// clothd binary frames (protocol/PROTOCOL.md, "Frames"): the 40-byte header
// and either float32 positions (flags 0) or 16-bit positions quantized in the
// frame's bounding box (flags bit 0); then, when subscribed with `channels`,
// each particle's velocity (flags bit 1: float32, or quantized in its own
// box) and unit normal (flags bit 2: float32, or two 16-bit octahedral
// values). Runs in the browser and in Node.

export const HEADER_BYTES = 40;
export const FLAG_QUANTIZED = 1;
export const FLAG_VELOCITIES = 2;
export const FLAG_NORMALS = 4;
const FLAGS_KNOWN = FLAG_QUANTIZED | FLAG_VELOCITIES | FLAG_NORMALS;
const BOX_BYTES = 24; // f32[3] min + f32[3] max before quantized triplets

export class FrameError extends Error {}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// Byte offsets of each part: positions, velocities (-1: none), normals
// (-1: none), and the total length.
function sections(flags, count) {
  const quantized = (flags & FLAG_QUANTIZED) !== 0;
  const xyz = quantized ? BOX_BYTES + 6 * count : 12 * count;
  let at = HEADER_BYTES + xyz;
  const out = { positions: HEADER_BYTES, velocities: -1, normals: -1, end: 0 };
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

// Reads the header of a frame held in an ArrayBuffer or a typed array.
// Returns {instance, frame, time, count, flags, quantized, hasVelocities,
// hasNormals, byteLength}.
export function decodeHeader(data) {
  const bytes = toBytes(data);
  if (bytes.byteLength < HEADER_BYTES) throw new FrameError(`frame: ${bytes.byteLength} bytes, shorter than its header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== 0x89 || bytes[1] !== 0x43 || bytes[2] !== 0x4c || bytes[3] !== 0x46) throw new FrameError('frame: bad magic');
  const version = dv.getUint16(4, true);
  if (version !== 1) throw new FrameError(`frame: unsupported version ${version}`);
  const flags = dv.getUint16(6, true);
  if ((flags & ~FLAGS_KNOWN) !== 0) throw new FrameError(`frame: unknown flags 0x${flags.toString(16)}`);
  const length = dv.getUint32(8, true);
  const count = dv.getUint32(32, true);
  const expected = sections(flags, count).end;
  if (length !== expected) throw new FrameError(`frame: length ${length} does not match ${count} particles (want ${expected})`);
  if (bytes.byteLength !== length) throw new FrameError(`frame: ${bytes.byteLength} bytes, header says ${length}`);
  const lo = dv.getUint32(16, true);
  const hi = dv.getUint32(20, true);
  return {
    instance: dv.getUint32(12, true),
    frame: hi * 4294967296 + lo, // exact up to 2^53
    time: dv.getFloat64(24, true),
    count,
    flags,
    quantized: (flags & FLAG_QUANTIZED) !== 0,
    hasVelocities: (flags & FLAG_VELOCITIES) !== 0,
    hasNormals: (flags & FLAG_NORMALS) !== 0,
    byteLength: length,
  };
}

// float32 triplets at `offset` into `out`.
function plain(bytes, dv, offset, out) {
  const n3 = out.length;
  if (LITTLE_ENDIAN && (bytes.byteOffset + offset) % 4 === 0) {
    out.set(new Float32Array(bytes.buffer, bytes.byteOffset + offset, n3));
  } else {
    for (let i = 0; i < n3; i++) out[i] = dv.getFloat32(offset + 4 * i, true);
  }
}

// A box and uint16 triplets at `offset` into `out`: v = min + (q / 65535) *
// (max - min) in float64, stored as float32 (the protocol's formula, so
// results match the test vectors bit for bit). Returns [min, max].
function boxed(bytes, dv, offset, out) {
  const n3 = out.length;
  const min = [dv.getFloat32(offset, true), dv.getFloat32(offset + 4, true), dv.getFloat32(offset + 8, true)];
  const max = [dv.getFloat32(offset + 12, true), dv.getFloat32(offset + 16, true), dv.getFloat32(offset + 20, true)];
  const at = offset + BOX_BYTES;
  let q;
  if (LITTLE_ENDIAN && (bytes.byteOffset + at) % 2 === 0) {
    q = new Uint16Array(bytes.buffer, bytes.byteOffset + at, n3);
  } else {
    q = new Uint16Array(n3);
    for (let i = 0; i < n3; i++) q[i] = dv.getUint16(at + 2 * i, true);
  }
  const [x0, y0, z0] = min;
  const dx = max[0] - x0;
  const dy = max[1] - y0;
  const dz = max[2] - z0;
  for (let i = 0; i < n3; i += 3) {
    out[i] = x0 + (q[i] / 65535) * dx;
    out[i + 1] = y0 + (q[i + 1] / 65535) * dy;
    out[i + 2] = z0 + (q[i + 2] / 65535) * dz;
  }
  return [min, max];
}

// Two uint16 (octahedral) per particle into unit float32 triplets; (0, 0)
// is no normal: (0, 0, 0).
function octahedral(dv, offset, out) {
  for (let i = 0; i < out.length; i += 3) {
    const qu = dv.getUint16(offset + (4 * i) / 3, true);
    const qv = dv.getUint16(offset + (4 * i) / 3 + 2, true);
    if (qu === 0 && qv === 0) {
      out[i] = out[i + 1] = out[i + 2] = 0;
      continue;
    }
    let u = (qu / 65535) * 2 - 1;
    let v = (qv / 65535) * 2 - 1;
    const z = 1 - Math.abs(u) - Math.abs(v);
    if (z < 0) {
      const fu = (1 - Math.abs(v)) * (u >= 0 ? 1 : -1);
      const fv = (1 - Math.abs(u)) * (v >= 0 ? 1 : -1);
      u = fu;
      v = fv;
    }
    const len = Math.sqrt(u * u + v * v + z * z);
    out[i] = u / len;
    out[i + 1] = v / len;
    out[i + 2] = z / len;
  }
}

// Decodes a whole frame. `out` (optional) is a Float32Array of 3 * count
// floats to fill in place (a geometry's position array); a new one is made
// otherwise; `channels` (optional) {velocities, normals} the same for the
// channels. Returns the header fields plus `positions`, `velocities` and
// `normals` (null when the frame does not carry them) and, for quantized
// frames, `bboxMin`, `bboxMax` (and `velocityMin`, `velocityMax`).
export function decodeFrame(data, out = null, channels = {}) {
  const bytes = toBytes(data);
  const h = decodeHeader(bytes);
  const n3 = 3 * h.count;
  const fit = (a) => (a && a.length === n3 ? a : new Float32Array(n3));
  const at = sections(h.flags, h.count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const positions = fit(out);
  const result = { ...h, positions, velocities: null, normals: null };
  if (h.quantized) [result.bboxMin, result.bboxMax] = boxed(bytes, dv, at.positions, positions);
  else plain(bytes, dv, at.positions, positions);
  if (at.velocities >= 0) {
    result.velocities = fit(channels.velocities);
    if (h.quantized) [result.velocityMin, result.velocityMax] = boxed(bytes, dv, at.velocities, result.velocities);
    else plain(bytes, dv, at.velocities, result.velocities);
  }
  if (at.normals >= 0) {
    result.normals = fit(channels.normals);
    if (h.quantized) octahedral(dv, at.normals, result.normals);
    else plain(bytes, dv, at.normals, result.normals);
  }
  return result;
}

function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new FrameError('frame: expected binary data');
}
