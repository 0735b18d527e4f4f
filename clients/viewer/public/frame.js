// clothd binary frames (protocol/PROTOCOL.md, "Frames"): the 40-byte header
// and either float32 positions (flags 0) or 16-bit positions quantized in the
// frame's bounding box (flags bit 0). Runs in the browser and in Node.

export const HEADER_BYTES = 40;
export const FLAG_QUANTIZED = 1;
const QUANT_HEADER_BYTES = 64; // header + f32[3] bbox min + f32[3] bbox max

export class FrameError extends Error {}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// Reads the header of a frame held in an ArrayBuffer or a typed array.
// Returns {instance, frame, time, count, flags, quantized, byteLength}.
export function decodeHeader(data) {
  const bytes = toBytes(data);
  if (bytes.byteLength < HEADER_BYTES) throw new FrameError(`frame: ${bytes.byteLength} bytes, shorter than its header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== 0x89 || bytes[1] !== 0x43 || bytes[2] !== 0x4c || bytes[3] !== 0x46) throw new FrameError('frame: bad magic');
  const version = dv.getUint16(4, true);
  if (version !== 1) throw new FrameError(`frame: unsupported version ${version}`);
  const flags = dv.getUint16(6, true);
  if ((flags & ~FLAG_QUANTIZED) !== 0) throw new FrameError(`frame: unknown flags 0x${flags.toString(16)}`);
  const length = dv.getUint32(8, true);
  const count = dv.getUint32(32, true);
  const quantized = (flags & FLAG_QUANTIZED) !== 0;
  const expected = quantized ? QUANT_HEADER_BYTES + 6 * count : HEADER_BYTES + 12 * count;
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
    quantized,
    byteLength: length,
  };
}

// Decodes a whole frame. `out` (optional) is a Float32Array of 3 * count
// floats to fill in place (a geometry's position array); a new one is made
// otherwise. Returns the header fields plus `positions` and, for quantized
// frames, `bboxMin` and `bboxMax`.
export function decodeFrame(data, out = null) {
  const bytes = toBytes(data);
  const h = decodeHeader(bytes);
  const n3 = 3 * h.count;
  const positions = out && out.length === n3 ? out : new Float32Array(n3);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!h.quantized) {
    if (LITTLE_ENDIAN && (bytes.byteOffset + HEADER_BYTES) % 4 === 0) {
      positions.set(new Float32Array(bytes.buffer, bytes.byteOffset + HEADER_BYTES, n3));
    } else {
      for (let i = 0; i < n3; i++) positions[i] = dv.getFloat32(HEADER_BYTES + 4 * i, true);
    }
    return { ...h, positions };
  }
  const min = [dv.getFloat32(40, true), dv.getFloat32(44, true), dv.getFloat32(48, true)];
  const max = [dv.getFloat32(52, true), dv.getFloat32(56, true), dv.getFloat32(60, true)];
  let q;
  if (LITTLE_ENDIAN && (bytes.byteOffset + QUANT_HEADER_BYTES) % 2 === 0) {
    q = new Uint16Array(bytes.buffer, bytes.byteOffset + QUANT_HEADER_BYTES, n3);
  } else {
    q = new Uint16Array(n3);
    for (let i = 0; i < n3; i++) q[i] = dv.getUint16(QUANT_HEADER_BYTES + 2 * i, true);
  }
  // p = min + (q / 65535) * (max - min) in float64, stored as float32: the
  // protocol's formula, so results match the test vectors bit for bit.
  const [x0, y0, z0] = min;
  const dx = max[0] - x0;
  const dy = max[1] - y0;
  const dz = max[2] - z0;
  for (let i = 0; i < n3; i += 3) {
    positions[i] = x0 + (q[i] / 65535) * dx;
    positions[i + 1] = y0 + (q[i + 1] / 65535) * dy;
    positions[i + 2] = z0 + (q[i + 2] / 65535) * dz;
  }
  return { ...h, positions, bboxMin: min, bboxMax: max };
}

function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new FrameError('frame: expected binary data');
}
