// clothd binary frames for the page: the Node client's decoder
// (clients/node/lib/frame.js, the one definition of the frame layout and
// its channels) with the page's calling convention. Runs in the browser and
// in Node.
//
// The import's path is the same relative path on disk (from public/ to
// clients/node/lib/) and in the browser, where it resolves to the URL
// /node/lib/frame.js: the viewer's server answers that URL with the Node
// client's CommonJS file wrapped as an ES module whose default export is
// its module.exports (server.js, NODE_FRAME_URL). Node imports the file
// itself, a CommonJS module whose default export is the same.

import clothdFrame from '../../node/lib/frame.js';

const { decodeFrame: decode, decodeHeader: header } = clothdFrame;

export const HEADER_BYTES = clothdFrame.FRAME_HEADER_SIZE;
export const FLAG_QUANTIZED = clothdFrame.FLAG_QUANTIZED;
export const FLAG_VELOCITIES = clothdFrame.FLAG_VELOCITIES;
export const FLAG_NORMALS = clothdFrame.FLAG_NORMALS;
// What the decoder throws for a frame that breaks the protocol.
export const FrameError = clothdFrame.ProtocolError;

function headerFields(h) {
  return {
    instance: h.instance,
    frame: h.frame,
    time: h.time,
    count: h.count,
    flags: h.flags,
    quantized: h.quantized,
    hasVelocities: (h.flags & FLAG_VELOCITIES) !== 0,
    hasNormals: (h.flags & FLAG_NORMALS) !== 0,
    byteLength: h.length,
  };
}

// Reads the header of a frame held in an ArrayBuffer or a typed array.
// Returns {instance, frame, time, count, flags, quantized, hasVelocities,
// hasNormals, byteLength}.
export function decodeHeader(data) {
  return headerFields(header(data));
}

// Decodes a whole frame. `out` (optional) is a Float32Array of 3 * count
// floats to fill in place (a geometry's position array); a new one is made
// otherwise; `channels` (optional) {velocities, normals} the same for the
// channels. Returns the header fields plus `positions`, `velocities` and
// `normals` (null when the frame does not carry them) and, for quantized
// frames, `bboxMin`, `bboxMax` (and `velocityMin`, `velocityMax`). The
// arrays are the page's own, never views on `data`.
export function decodeFrame(data, out = null, channels = {}) {
  const f = decode(data, { copy: true, positions: out, velocities: channels.velocities, normals: channels.normals });
  const result = {
    ...headerFields({ ...f, length: clothdFrame.frameSizeFlags(f.count, f.flags) }),
    positions: f.positions,
    velocities: f.velocities,
    normals: f.normals,
  };
  if (f.bounds) [result.bboxMin, result.bboxMax] = [f.bounds.min, f.bounds.max];
  if (f.velocityBounds) [result.velocityMin, result.velocityMax] = [f.velocityBounds.min, f.velocityBounds.max];
  return result;
}
