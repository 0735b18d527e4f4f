'use strict';
// The server's shared-memory frame ring (PROTOCOL.md "Shared-memory
// frames"), read the Node way. Node core has no mmap, so the ring is an
// open file of /dev/shm read with pread(2): fs.readSync of the frame at
// 4096 + position mod size, then of the 8-byte "claimed" counter at offset
// 24. The rule is the protocol's: the copy is whole iff claimed <= position
// + size, else the server overwrote it meanwhile and the frame is missed.
// The second read is a system call that starts after the first returned,
// so it sees a claim at least as new as any byte the copy saw.
//
// Each frame costs a copy out of the kernel as a socket read does; what a
// Node subscriber gains is the server's side (one copy for every
// subscriber instead of one send each) and the same API as the other
// clients. Node only: the viewer's page never loads this file.

const fs = require('node:fs');
const { ProtocolError } = require('./errors.js');

const SHM_DIR = '/dev/shm';
const MAGIC = 'CLSM';
const VERSION = 1;
const DATA = 4096;
const OFF_CLAIMED = 24;
const OFF_PUBLISHED = 32;
const HEADER_BYTES = 44; // magic .. pid

class Ring {
  /**
   * Opens the ring a `"shm":true` subscribe reply names ({name, size})
   * read-only and checks its header. Throws the fs error (ENOENT, EACCES:
   * not on clothd's host, or not as its user) with the path in its
   * message, or ProtocolError for an object that is not such a ring.
   */
  constructor(shm) {
    const name = shm?.name;
    const size = shm?.size;
    if (typeof name !== 'string' || !name.startsWith('/') || name.slice(1).includes('/') || !Number.isSafeInteger(size) || size <= 0)
      throw new ProtocolError(`subscribe: the reply's shm names no ring: ${JSON.stringify(shm)}`);
    this.name = name;
    this.size = size;
    this.path = SHM_DIR + name;
    this._size = BigInt(size);
    this._counter = Buffer.alloc(8);
    try {
      this.fd = fs.openSync(this.path, 'r');
    } catch (err) {
      err.message = `shm: cannot open the server's ring ${this.path}: ${err.message} (a shared-memory subscriber ` +
        "runs on clothd's host as clothd's user, and sees its /dev/shm)";
      throw err;
    }
    try {
      this._check();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  _check() {
    const h = Buffer.alloc(HEADER_BYTES);
    const got = fs.readSync(this.fd, h, 0, HEADER_BYTES, 0);
    const objectBytes = fs.fstatSync(this.fd).size;
    const magic = h.toString('latin1', 0, 4);
    const version = h.readUInt32LE(4);
    const data = h.readBigUInt64LE(8);
    if (got < HEADER_BYTES || magic !== MAGIC || version !== VERSION || data !== BigInt(DATA)) {
      throw new ProtocolError(`shm: ${this.path} is not a version ${VERSION} ring (magic ${JSON.stringify(magic)}, ` +
        `version ${version}, data at ${data})`);
    }
    const size = h.readBigUInt64LE(16);
    if (size !== this._size || objectBytes < DATA + this.size) {
      throw new ProtocolError(`shm: ${this.path} holds ${size} bytes of data in ${objectBytes} bytes; the ` +
        `subscribe reply said ${this.size}`);
    }
  }

  _readCounter(offset) {
    fs.readSync(this.fd, this._counter, 0, 8, offset);
    return this._counter.readBigUInt64LE(0);
  }

  /**
   * The frame a reference names (decodeReference's {position, length}):
   * a Buffer of its own (offset 0, so the payload is 4-byte aligned), or
   * null when the server overwrote it before the copy was done. Throws
   * ProtocolError for a reference that names no frame of this ring.
   */
  read(ref) {
    const start = ref.position % this._size;
    if (start + BigInt(ref.length) > this._size)
      throw new ProtocolError(`frame: a shared-memory reference to ${ref.length} bytes at ${start} crosses the end of the ${this.size}-byte ring`);
    if (this._readCounter(OFF_PUBLISHED) < ref.position + BigInt(ref.length))
      throw new ProtocolError(`frame: a shared-memory reference to bytes ${ref.position}.. that the ring has not published`);
    const frame = Buffer.from(new ArrayBuffer(ref.length));
    const got = fs.readSync(this.fd, frame, 0, ref.length, DATA + Number(start));
    if (got !== ref.length) throw new ProtocolError(`shm: ${this.path}: read ${got} of ${ref.length} bytes`);
    return this._readCounter(OFF_CLAIMED) <= ref.position + this._size ? frame : null;
  }

  /** Closes the file; safe to call twice. */
  close() {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    fs.closeSync(fd);
  }
}

module.exports = { Ring };
