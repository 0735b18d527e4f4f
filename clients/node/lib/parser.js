'use strict';
// Splits the server's byte stream into messages. Each message starts with
// '{' (a JSON line, up to and excluding '\n') or 0x89 (a binary frame whose
// total length is the u32 at offset 8). Chunks may split a message anywhere;
// the parser keeps its state between chunks.

const { ProtocolError } = require('./errors.js');
const { FRAME_MAGIC, FRAME_HEADER_SIZE } = require('./frame.js');

const LBRACE = 0x7b;
const NEWLINE = 0x0a;
const IDLE = 0;
const LINE = 1;
const HEADER = 2;
const BODY = 3;

/** Default bound on one message (a JSON line or a frame), in bytes. */
const DEFAULT_MAX_MESSAGE_BYTES = 512 * 1024 * 1024;

class MessageParser {
  /** `maxMessageBytes` bounds one line or frame (ProtocolError beyond). */
  constructor(maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES) {
    this.maxMessageBytes = maxMessageBytes;
    this.state = IDLE;
    this.lineParts = [];
    this.lineBytes = 0;
    this.header = new Uint8Array(FRAME_HEADER_SIZE);
    this.headerFill = 0;
    this.frame = null; // the frame being assembled (its own aligned buffer)
    this.frameFill = 0;
  }

  /** True when no message is half-received. */
  get idle() {
    return this.state === IDLE;
  }

  /**
   * Consumes one chunk (a Buffer) and returns the complete messages in it:
   * { kind: 'line', bytes } without the '\n', or { kind: 'frame', bytes }
   * with the whole frame. A frame entirely inside `chunk` is a subarray of
   * it (no copy); one split across chunks is copied into a fresh buffer
   * that starts at offset 0. Throws ProtocolError when the stream is broken.
   */
  push(chunk) {
    const out = [];
    let off = 0;
    const n = chunk.length;
    while (off < n) {
      switch (this.state) {
        case IDLE: {
          const b = chunk[off];
          if (b === LBRACE) {
            this.state = LINE;
          } else if (b === FRAME_MAGIC[0]) {
            // Fast path: the whole frame inside this chunk.
            if (n - off >= FRAME_HEADER_SIZE) {
              const length = this._checkHeader(chunk, off);
              if (n - off >= length) {
                out.push({ kind: 'frame', bytes: chunk.subarray(off, off + length) });
                off += length;
                break;
              }
            }
            this.state = HEADER;
            this.headerFill = 0;
          } else {
            throw new ProtocolError(`stream: unexpected byte 0x${b.toString(16).padStart(2, '0')} at the start of a message`);
          }
          break;
        }
        case LINE: {
          const nl = chunk.indexOf(NEWLINE, off);
          const end = nl < 0 ? n : nl;
          if (this.lineBytes + (end - off) > this.maxMessageBytes)
            throw new ProtocolError(`stream: a reply line longer than ${this.maxMessageBytes} bytes`);
          if (nl < 0) {
            this.lineParts.push(chunk.subarray(off));
            this.lineBytes += n - off;
            off = n;
            break;
          }
          let line;
          if (this.lineParts.length === 0) {
            line = chunk.subarray(off, nl);
          } else {
            this.lineParts.push(chunk.subarray(off, nl));
            line = Buffer.concat(this.lineParts, this.lineBytes + (nl - off));
            this.lineParts = [];
          }
          this.lineBytes = 0;
          off = nl + 1;
          this.state = IDLE;
          out.push({ kind: 'line', bytes: line });
          break;
        }
        case HEADER: {
          const take = Math.min(FRAME_HEADER_SIZE - this.headerFill, n - off);
          this.header.set(chunk.subarray(off, off + take), this.headerFill);
          this.headerFill += take;
          off += take;
          if (this.headerFill === FRAME_HEADER_SIZE) {
            const length = this._checkHeader(this.header, 0);
            // A fresh ArrayBuffer: offset 0, so the payload is 4-byte aligned.
            this.frame = Buffer.from(new ArrayBuffer(length));
            this.frame.set(this.header, 0);
            this.frameFill = FRAME_HEADER_SIZE;
            this.state = BODY;
            if (length === FRAME_HEADER_SIZE) this._finishFrame(out);
          }
          break;
        }
        case BODY: {
          const take = Math.min(this.frame.length - this.frameFill, n - off);
          this.frame.set(chunk.subarray(off, off + take), this.frameFill);
          this.frameFill += take;
          off += take;
          if (this.frameFill === this.frame.length) this._finishFrame(out);
          break;
        }
        default:
          throw new Error('unreachable');
      }
    }
    return out;
  }

  _finishFrame(out) {
    out.push({ kind: 'frame', bytes: this.frame });
    this.frame = null;
    this.frameFill = 0;
    this.state = IDLE;
  }

  /** Checks the magic and the length of a header at `bytes[off..off+40)`. */
  _checkHeader(bytes, off) {
    for (let i = 1; i < 4; i++) {
      if (bytes[off + i] !== FRAME_MAGIC[i]) {
        const got = Array.from(bytes.subarray(off, off + 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
        throw new ProtocolError(`frame: bad magic ${got} (expected 89 43 4c 46)`);
      }
    }
    const length = bytes[off + 8] + bytes[off + 9] * 0x100 + bytes[off + 10] * 0x10000 + bytes[off + 11] * 0x1000000;
    if (length < FRAME_HEADER_SIZE)
      throw new ProtocolError(`frame: total length ${length} is shorter than the ${FRAME_HEADER_SIZE}-byte header`);
    if (length > this.maxMessageBytes)
      throw new ProtocolError(`frame: total length ${length} exceeds the limit of ${this.maxMessageBytes} bytes`);
    return length;
  }
}

module.exports = { MessageParser, DEFAULT_MAX_MESSAGE_BYTES };
