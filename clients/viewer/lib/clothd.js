// A minimal clothd connection: JSON requests with ids, replies matched in
// order, binary frames and events handed out as they arrive. It is what the
// viewer's relay (and its test) need, nothing more; clients/node/ is the full
// client.

import fs from 'node:fs';
import net from 'node:net';
import { EventEmitter } from 'node:events';

export const FRAME_MAGIC = 0x89;
export const FRAME_HEADER = 40;
// A frame longer than this is taken as a corrupt stream (the server's own
// bound is 40 + 12 * 357,913,937 bytes; a viewer has no use for such sizes).
const MAX_FRAME = 512 * 1024 * 1024;

export class ClothdError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
    this.serverMessage = message;
  }
}

// Splits "host:port" (or ":port", or "port") into {host, port}.
export function parseAddress(text, defaultHost = '127.0.0.1', defaultPort = 7878) {
  const s = String(text ?? '').trim();
  if (s === '') return { host: defaultHost, port: defaultPort };
  const m = /^(?:\[([^\]]+)\]|([^:]*))(?::(\d+))?$/.exec(s);
  if (!m) throw new Error(`bad address "${s}" (want host:port)`);
  let host = m[1] ?? m[2] ?? '';
  let portText = m[3];
  if (portText === undefined && /^\d+$/.test(host)) {
    portText = host;
    host = '';
  }
  const port = portText === undefined ? defaultPort : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port in "${s}"`);
  return { host: host || defaultHost, port };
}

const TOKEN_MIN = 16; // clothd's bounds on a token (bytes)
const TOKEN_MAX = 1024;

// The token to present to clothd: the first line of tokenFile (trailing
// CR/LF stripped), else CLOTHD_TOKEN, else none (null). Throws with a
// message naming the source when it cannot be a clothd token.
export function loadToken(tokenFile, env = process.env) {
  let token;
  let source;
  if (tokenFile !== null && tokenFile !== undefined) {
    source = `--token-file ${tokenFile}`;
    let text;
    try {
      text = fs.readFileSync(tokenFile, 'utf8');
    } catch (err) {
      throw new Error(`${source}: cannot read it (${err.code ?? err.message})`);
    }
    token = text.split('\n')[0].replace(/\r+$/, '');
  } else if (env.CLOTHD_TOKEN !== undefined && env.CLOTHD_TOKEN !== '') {
    source = 'CLOTHD_TOKEN';
    token = env.CLOTHD_TOKEN.replace(/[\r\n]+$/, '');
  } else {
    return null;
  }
  const bytes = Buffer.byteLength(token);
  if (bytes < TOKEN_MIN || bytes > TOKEN_MAX) {
    throw new Error(`${source}: the token must be ${TOKEN_MIN} to ${TOKEN_MAX} bytes on one line, not ${bytes}`);
  }
  return token;
}

// One TCP connection to clothd.
// Events: 'frame' (Buffer, the exact frame bytes), 'event' (object),
// 'close' (Error|undefined), 'error' (Error, only while connecting).
export class ClothdConnection extends EventEmitter {
  constructor(socket) {
    super();
    this.socket = socket;
    this.pending = [];   // {resolve, reject} in request order
    this.nextId = 1;
    this.closed = false;
    this.chunks = [];
    this.buffered = 0;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.#onData(chunk));
    socket.on('error', (err) => this.#fail(err));
    socket.on('close', () => this.#fail(new Error('connection closed')));
  }

  static connect(host, port, { timeoutMs = 3000 } = {}) {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect ${host}:${port}: timed out`));
      }, timeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new ClothdConnection(socket));
      });
    });
  }

  // Sends {cmd, ...fields} and resolves with the reply (rejects with
  // ClothdError on an error reply).
  request(cmd, fields = {}) {
    if (this.closed) return Promise.reject(new Error('not connected'));
    const id = this.nextId++;
    const line = JSON.stringify({ id, cmd, ...fields }) + '\n';
    return new Promise((resolve, reject) => {
      this.pending.push({ id, resolve, reject });
      this.socket.write(line);
    });
  }

  // Sends several requests, [[cmd, fields], ...], in one write, so that
  // clothd reads them together and runs them back to back (another client's
  // request waiting for them runs before or after, not between); resolves
  // with a list of {reply} or {error}, in order, once all are answered.
  requestBatch(list) {
    if (this.closed) return Promise.reject(new Error('not connected'));
    let text = '';
    const answers = list.map(([cmd, fields = {}]) => {
      const id = this.nextId++;
      text += JSON.stringify({ id, cmd, ...fields }) + '\n';
      return new Promise((resolve) => {
        this.pending.push({ id, resolve: (reply) => resolve({ reply }), reject: (error) => resolve({ error }) });
      });
    });
    this.socket.write(text);
    return Promise.all(answers);
  }

  close() {
    if (!this.closed) this.socket.destroy();
    this.#fail(undefined);
  }

  #fail(err) {
    if (this.closed) return;
    this.closed = true;
    const pending = this.pending;
    this.pending = [];
    for (const p of pending) p.reject(err ?? new Error('connection closed'));
    this.socket.destroy();
    this.emit('close', err);
  }

  #onData(chunk) {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    let off = 0;
    while (off < buf.length && !this.closed) {
      const first = buf[off];
      if (first === FRAME_MAGIC) {
        if (buf.length - off < FRAME_HEADER) break;
        const length = buf.readUInt32LE(off + 8);
        if (length < FRAME_HEADER || length > MAX_FRAME) {
          this.#fail(new Error(`bad frame length ${length}`));
          return;
        }
        if (buf.length - off < length) break;
        // A copy: the frame outlives this read buffer (it is queued for browsers).
        this.emit('frame', Buffer.from(buf.subarray(off, off + length)));
        off += length;
      } else {
        const nl = buf.indexOf(0x0a, off);
        if (nl < 0) break;
        const text = buf.toString('utf8', off, nl);
        off = nl + 1;
        let msg;
        try {
          msg = JSON.parse(text);
        } catch {
          this.#fail(new Error(`unreadable line from clothd: ${text.slice(0, 80)}`));
          return;
        }
        this.#onMessage(msg);
      }
    }
    const rest = buf.length - off;
    this.chunks = rest > 0 ? [buf.subarray(off)] : [];
    this.buffered = rest;
  }

  #onMessage(msg) {
    if (msg && typeof msg === 'object' && 'event' in msg && !('ok' in msg)) {
      this.emit('event', msg);
      return;
    }
    const p = this.pending.shift();
    if (!p) return; // a reply nobody waits for (cannot happen with this class)
    if (msg.ok) p.resolve(msg);
    else p.reject(new ClothdError(msg.error?.code ?? 'internal', msg.error?.message ?? 'unknown error'));
  }
}
