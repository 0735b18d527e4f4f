'use strict';
/**
 * clothd — a zero-dependency Node.js client for the clothd cloth server.
 *
 * One connection carries JSON lines both ways (requests, replies in
 * request order, events) and binary frames from the server: TCP, or on the
 * same host the Unix socket of a clothd started with `--unix PATH`
 * (`Client.connect({ path })`, as net.connect takes it; the same bytes). Commands return
 * Promises; frames arrive as 'frame' events and through client.frames(), an
 * async iterator. On clothd's host, subscribe({shm: true}) takes them out of
 * the server's shared-memory ring instead (lib/shm.js): the same frames.
 *
 *   const { Client } = require('clothd');
 *   const client = await Client.connect({ port: 7878 });
 *   const cloth = await client.createCloth({ width: 20, height: 20 });
 *   await client.pin(cloth, [...Array(20).keys()]);
 *   await client.step({ dt: 1 / 60 });
 *   const state = await client.get(cloth);   // state.positions: Float32Array
 *   await client.close();
 *
 * A server started with --token-file wants `auth` first: give the token
 * (`Client.connect({ port, token })`, or set CLOTHD_TOKEN) and the client
 * sends it before anything else on its connection; `client.access` says
 * what it was granted ("full" or "readonly"). Then `hello`: the server's
 * features and limits are kept (`client.features`), a feature the options
 * `require` must be there, and a call needing one the server lacks rejects
 * with FeatureMissing before it is sent.
 *
 * See README.md for the whole API and PROTOCOL.md for the wire contract.
 */

const net = require('node:net');
const { EventEmitter } = require('node:events');

const {
  ERROR_CODES, ERROR_CLASSES, errorFromReply, ClothdError, ParseError, UnknownCommand, InvalidArgument, NotFound,
  LimitExceeded, LineTooLong, InternalError, Unauthorized, ProtocolError, ConnectionClosed, ClothdWarning,
  EndpointUnavailable, IncompatibleServer, FeatureMissing, ShmUnavailable,
} = require('./lib/errors.js');
const { FEATURES, PAINTED, featuresNeeded, lackMessage } = require('./lib/features.js');
const {
  SCENE_COMMANDS, takesScene, rendezvousWeight, placeScene, checkSceneName, parseEndpoint, checkUnixPath,
  UNIX_PREFIX, UNIX_PATH_MAX,
} = require('./lib/placement.js');
const {
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
  frameSize,
  quantizedFrameSize,
  frameSizeFlags,
  octahedralDecode,
  decodeHeader,
  decodeFrame,
  decodeReference,
} = require('./lib/frame.js');
const { MessageParser, DEFAULT_MAX_MESSAGE_BYTES } = require('./lib/parser.js');
const { Ring } = require('./lib/shm.js');

const VERSION = '0.1.0';
const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 7878;
/** Frames an async iterator keeps for a slow consumer (newest kept). */
const DEFAULT_FRAME_QUEUE = 256;
/** Queued request lines are sent in writes of about this many bytes. */
const WRITE_BATCH_BYTES = 64 * 1024;
/** The environment variable a client takes its token from when given none. */
const TOKEN_ENV = 'CLOTHD_TOKEN';

// Typed arrays (a Float32Array of positions) go on the wire as JSON arrays.
function jsonReplacer(_key, value) {
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Array.from(value);
  return value;
}

function vec(v) {
  return v === undefined || v === null ? undefined : Array.from(v);
}

function vecList(list) {
  return list === undefined || list === null ? undefined : Array.from(list, (v) => Array.from(v));
}

// Create/set fields that are vectors (sent as arrays whatever array-like is given).
const VECTOR_FIELDS = ['origin', 'right', 'down', 'gravity'];

// Binary requests (PROTOCOL.md "Binary requests"): 0x89 'C' 'L' 'R', a
// 32-byte little-endian header, then raw u32 and f32 arrays.
const REQUEST_MAGIC = Buffer.from([0x89, 0x43, 0x4c, 0x52]);
const REQUEST_HEADER_SIZE = 32;
const REQUEST_SKIN = 1;
const REQUEST_PIN = 2;
const REQUEST_FLAG_NORMALS = 1;

/** Vertices as one flat list of numbers: vec3s, or already flat (any array-like). */
function flatFloats(list, what) {
  if (list === undefined || list === null) return undefined;
  const items = Array.from(list);
  const out = items.length > 0 && typeof items[0] === 'object' ? items.flatMap((v) => Array.from(v)) : items;
  if (out.length % 3 !== 0) throw new TypeError(`${what}: ${out.length} numbers is not 3 per vertex`);
  return out;
}

/**
 * One binary request: the header (request id `id`, 0: no id in the reply)
 * and the payload arrays, each a Uint32Array or Float32Array written
 * little-endian. Returns a Buffer.
 */
function encodeBinaryRequest(kind, instance, id, count, flags, arrays) {
  const length = REQUEST_HEADER_SIZE + arrays.reduce((n, a) => n + 4 * a.length, 0);
  if (length > 0xffffffff) throw new RangeError('binary request: longer than its u32 length field');
  const buf = Buffer.alloc(length);
  REQUEST_MAGIC.copy(buf, 0);
  buf.writeUInt16LE(1, 4);
  buf.writeUInt16LE(flags, 6);
  buf.writeUInt32LE(length, 8);
  buf.writeUInt32LE(instance >>> 0, 12);
  buf.writeUInt32LE(kind, 16);
  buf.writeUInt32LE(id >>> 0, 20);
  buf.writeUInt32LE(count >>> 0, 24);
  buf.writeUInt32LE(0, 28);
  let off = REQUEST_HEADER_SIZE;
  for (const a of arrays) {
    const float = a instanceof Float32Array;
    for (let i = 0; i < a.length; i++, off += 4) {
      if (float) buf.writeFloatLE(a[i], off);
      else buf.writeUInt32LE(a[i], off);
    }
  }
  return buf;
}

function idList(list) {
  return list === undefined || list === null ? undefined : Array.from(list);
}

function truncate(text, max = 200) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A FIFO with O(1) shift (pending requests, queued frames). */
class Fifo {
  constructor() {
    this.items = [];
    this.head = 0;
  }

  get length() {
    return this.items.length - this.head;
  }

  push(item) {
    this.items.push(item);
  }

  shift() {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  drain() {
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return rest;
  }
}

/**
 * The async iterator returned by client.frames(). It starts collecting
 * frames when it is created (not at the first next()), keeps at most
 * `maxQueue` of them for a slow consumer (the oldest are dropped and counted
 * in `dropped`), and ends when the connection closes (after yielding what
 * it holds), or throws the ProtocolError that broke the connection.
 */
class FrameIterator {
  constructor(client, options) {
    this.client = client;
    this.maxQueue = Math.max(1, options.maxQueue ?? DEFAULT_FRAME_QUEUE);
    this.instance = options.instance;
    this.dropped = 0;
    this.queue = new Fifo();
    this.waiters = new Fifo();
    this.done = false;
    this.error = null;
    this.signal = options.signal;
    this.onAbort = () => this._finish(this.signal.reason ?? new Error('aborted'));
    if (this.signal) {
      if (this.signal.aborted) {
        this.done = true;
        this.error = this.signal.reason ?? new Error('aborted');
      } else {
        this.signal.addEventListener('abort', this.onAbort, { once: true });
      }
    }
  }

  /** Frames received and not yet taken. */
  get queued() {
    return this.queue.length;
  }

  _push(frame) {
    if (this.done) return;
    if (this.instance !== undefined && frame.instance !== this.instance) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve({ value: frame, done: false });
      return;
    }
    this.queue.push(frame);
    if (this.queue.length > this.maxQueue) {
      this.queue.shift();
      this.dropped++;
    }
  }

  // The connection ended (error null) or broke (error set), or the signal
  // aborted: waiting next() calls settle now; queued frames stay readable.
  _finish(error) {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this._detach();
    // Waiters exist only when the queue is empty: the first one gets the
    // error (if any), the others (and later calls) are done.
    const first = this.waiters.shift();
    if (first && this.error) {
      first.reject(this.error);
      this.error = null;
    } else if (first) {
      first.resolve({ value: undefined, done: true });
    }
    for (let w = this.waiters.shift(); w; w = this.waiters.shift()) w.resolve({ value: undefined, done: true });
  }

  _detach() {
    this.client._iterators.delete(this);
    if (this.signal) this.signal.removeEventListener('abort', this.onAbort);
  }

  next() {
    if (this.queue.length) return Promise.resolve({ value: this.queue.shift(), done: false });
    if (this.done) {
      if (this.error) {
        const err = this.error;
        this.error = null; // thrown once, then the iterator is just done
        return Promise.reject(err);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Stops collecting (called by `break` in for await). */
  return() {
    this.done = true;
    this.error = null;
    this._detach();
    this.queue.drain();
    for (let w = this.waiters.shift(); w; w = this.waiters.shift()) w.resolve({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/**
 * A connection to one clothd server.
 *
 * Events:
 *   'frame' (frame)  a decoded binary frame (see decodeFrame)
 *   'event' (event)  a server event line, e.g. {event: 'debug', enabled: true}
 *   'warning' (w)    a reply's warning (ClothdWarning: a member the server did
 *                    not read; with no listener it goes to process.emitWarning),
 *                    or a frame of an unknown version or flag was skipped
 *                    (ProtocolError)
 *   'error' (err)    the stream broke the protocol (only emitted when there is
 *                    a listener; pending requests are rejected with it anyway)
 *   'close' (err?)   the connection is closed; err is the ProtocolError or
 *                    socket error that closed it, undefined otherwise
 */
class Client extends EventEmitter {
  /**
   * options: host ('127.0.0.1'), port (7878), path (a Unix socket path,
   * `clothd --unix PATH`: used instead of host and port), noDelay (true),
   * maxMessageBytes (512 MiB: bound on one reply line or frame),
   * writableHighWaterMark (Node's default: the socket buffer above which
   * requests wait in the client's own queue for 'drain'), token (sent with
   * `auth` before anything else; undefined: $CLOTHD_TOKEN if set; '' or
   * null: none), strict (ask the server, with `hello`, to refuse a request
   * with a member it does not read, as invalid_argument, instead of
   * warning), require (features the server's hello must list, e.g.
   * ['scenes', 'softbody']: else connect() rejects with FeatureMissing
   * naming them and the server), hello (true; false: no handshake, so
   * nothing is known of the server and no call is checked against it).
   */
  constructor(options = {}) {
    super();
    this._strict = Boolean(options.strict);
    this._require = [...(options.require ?? [])].map(String);
    for (const f of this._require)
      if (!FEATURES.includes(f)) throw new RangeError(`require: unknown feature ${JSON.stringify(f)} (one of ${FEATURES.join(', ')})`);
    if (this._strict && !this._require.includes('strict')) this._require.push('strict');
    this._sayHello = options.hello ?? true;
    // What the connection's hello said: null while not known (not asked
    // yet, hello: false, or refused before `auth`); else {reply (null: a
    // server without hello), features, limits, version}.
    this._hello = null;
    // True from connect() until the hello reply: requests wait in the queue
    // behind the handshake's lines, to be checked against its features.
    this._handshake = false;
    this._handshakeLines = 0; // of the queue's head: auth and hello, sent during the handshake
    const token = options.token === undefined ? process.env[TOKEN_ENV] : options.token;
    this._token = token ? String(token) : null;
    this._access = null;
    this.host = options.host ?? DEFAULT_HOST;
    this.port = options.port ?? DEFAULT_PORT;
    /** The Unix socket path connected to instead of host:port (null: TCP). */
    this.path = options.path === undefined || options.path === null ? null : checkUnixPath(options.path);
    this._noDelay = options.noDelay ?? true;
    this._highWaterMark = options.writableHighWaterMark;
    this._parser = new MessageParser(options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    this._socket = null;
    this._state = 'new'; // new | connecting | open | closed
    this._connecting = null;
    this._nextId = 1;
    this._pending = new Fifo();
    this._writeQueue = []; // request lines not yet written
    this._flushScheduled = false;
    this._blocked = false; // waiting for 'drain'
    this._iterators = new Set();
    this._closeReason = null;
    this._closed = new Promise((resolve) => {
      this._resolveClosed = resolve;
    });
    this._stats = {
      requests: 0, replies: 0, frames: 0, events: 0, skippedFrames: 0, missedFrames: 0, writes: 0, drainWaits: 0,
    };
    // The server's shared-memory ring (lib/shm.js), open while this
    // connection has a subscription with shm: one per server.
    this._ring = null;
    // The scene a Scene is calling in: stamped on the requests of
    // SCENE_COMMANDS while set (lib/shard.js).
    this._scene = null;
  }

  /** Creates a client and connects it: `await Client.connect({port})`. */
  static connect(options = {}) {
    const client = new Client(options);
    return client.connect().then(() => client);
  }

  /**
   * Opens the connection. Resolves with the client once connected (and,
   * with a token, authenticated) and the server's `hello` is in (kept:
   * features, limits, serverVersion); rejects with the socket error (e.g.
   * ECONNREFUSED), with Unauthorized when the server refuses the token, or
   * with FeatureMissing when a required feature is missing (the client
   * is then closed, and requests queued behind reject with the same
   * error). Requests made before it resolves are queued and sent after
   * `auth` and `hello`, each checked against the server's features.
   */
  connect() {
    if (this._state === 'closed')
      return Promise.reject(new ConnectionClosed('clothd: the client is closed; make a new Client to reconnect'));
    if (this._connecting) return this._connecting;
    this._state = 'connecting';
    // With a token, `auth` is the connection's first request, then `hello`:
    // queued now, before any request that made this connect() happen, and
    // the only lines sent until hello's reply is in.
    const auth = this._token === null ? null : this._authRequest(this._token);
    const hello = this._sayHello || this._strict ? this._handshakeHello() : null;
    this._handshake = hello !== null;
    this._handshakeLines = this._writeQueue.length;
    for (const p of [auth, hello]) if (p) p.catch(() => {}); // reported through connect()
    const opened = new Promise((resolve, reject) => {
      this._rejectConnect = reject;
      const socket = new net.Socket(
        this._highWaterMark !== undefined ? { writableHighWaterMark: this._highWaterMark } : undefined,
      );
      this._socket = socket;
      const onConnectError = (err) => {
        // Node says "connect ECONNREFUSED 127.0.0.1:7878"; say whose.
        err.message = `clothd: cannot connect to ${this.endpoint}: ${err.message}`;
        reject(err);
      };
      socket.once('error', onConnectError);
      socket.on('data', (chunk) => this._onData(chunk));
      socket.on('drain', () => this._onDrain());
      socket.on('error', (err) => {
        if (this._closeReason === null) this._closeReason = err;
      });
      socket.on('close', () => {
        const reason = this._closeReason;
        this._teardown(
          reason instanceof Error ? reason : null,
          reason instanceof Error
            ? `clothd: connection lost (${reason.message})`
            : 'clothd: the server closed the connection',
        );
      });
      const address = this.path !== null ? { path: this.path } : { host: this.host, port: this.port };
      socket.connect(address, () => {
        socket.removeListener('error', onConnectError);
        if (this.path === null) socket.setNoDelay(this._noDelay);
        this._rejectConnect = null;
        if (this._state === 'closed') return; // closed while connecting
        this._state = 'open';
        this._flush();
        resolve(this);
      });
    });
    this._connecting = !auth && !hello
      ? opened
      : opened.then(() => auth).then(() => hello).then(
        () => this,
        (err) => {
          // The server refused the token, or the handshake (a missing
          // feature: already closed), or said why it closes (a limit).
          if (err instanceof ClothdError) this._teardown(err, `clothd: ${err.code}: ${err.message}`, null, err);
          throw err;
        },
      );
    return this._connecting;
  }

  // The connection's `hello` (strict when asked). Its reply is read by
  // _onHandshake before any queued request is sent. Resolves with the reply,
  // or null when the server has no hello, or (nothing required) refused it
  // before `auth`.
  _handshakeHello() {
    const line = `${JSON.stringify({ id: this._nextId, cmd: 'hello', strict: this._strict ? true : undefined })}\n`;
    const id = this._nextId++;
    return this._enqueue(line, id, 'hello', null, (reply) => this._onHandshake(reply)).catch((err) => {
      if (err instanceof UnknownCommand || (err instanceof Unauthorized && this._require.length === 0)) return null;
      throw err;
    });
  }

  // hello's reply, before its promise settles and before the queue moves:
  // keeps what the server said, checks the required features, then checks
  // and sends the requests that waited. Returns the error the hello
  // request rejects with (the client is then closed), or undefined.
  _onHandshake(reply) {
    if (reply.ok === true) {
      this._keepHello(reply);
    } else if (reply.error?.code === 'unknown_command') {
      this._hello = { reply: null, features: [], limits: null, version: null }; // a clothd before hello
    } else if (this._require.length > 0) {
      // Refused before `auth`, or a limit: what is required cannot be checked.
      const err = errorFromReply(String(reply.error?.code ?? 'internal'), String(reply.error?.message ?? ''), reply);
      this._teardown(err, `clothd: ${err.code}: ${err.message}`, null, err);
      return err;
    }
    const missing = this._require.filter((f) => !this.supports(f));
    if (missing.length > 0) {
      const neededBy = 'required by this client';
      const listed = this._hello.reply ? this._hello.features : null;
      const err = new FeatureMissing(this.endpoint, lackMessage(missing, listed, neededBy), missing, neededBy);
      this._teardown(err, err.message, null, err);
      return err;
    }
    this._releaseHandshake();
    return undefined;
  }

  _keepHello(reply) {
    this._hello = {
      reply,
      features: Object.freeze(Array.isArray(reply.features) ? reply.features.map(String) : []),
      limits: reply.limits && typeof reply.limits === 'object' ? reply.limits : null,
      version: typeof reply.version === 'string' ? reply.version : null,
    };
  }

  // The handshake is over: each request that waited behind it is checked
  // against the server's features (rejected unsent when one is missing),
  // then the queue is written. The queue holds exactly those requests, in
  // the order of this._pending (each queued one line).
  _releaseHandshake() {
    this._handshake = false;
    this._handshakeLines = 0;
    const waiting = this._pending.drain();
    const lines = this._writeQueue;
    const kept = [];
    for (const [i, p] of waiting.entries()) {
      const err = p.needs && lines.length === waiting.length ? this._lacking(p.needs, p.cmd) : null;
      if (err) {
        p.reject(err);
        this._stats.requests--;
      } else {
        this._pending.push(p);
        kept.push(lines[i]);
      }
    }
    if (lines.length === waiting.length) this._writeQueue = kept;
    this._flush();
  }

  // A FeatureMissing when the server is known to lack one of `needs`
  // (a request of `cmd`), else null (also when nothing is known).
  _lacking(needs, cmd) {
    if (this._hello === null) return null;
    const missing = needs.filter((f) => !this._hello.features.includes(f));
    if (missing.length === 0) return null;
    const features = this._hello.reply ? this._hello.features : null;
    const neededBy = `needed by ${JSON.stringify(cmd)}`;
    return new FeatureMissing(this.endpoint, lackMessage(missing, features, neededBy), missing, neededBy);
  }

  /** "host:port" of the server ("[::1]:7878" for IPv6), or "unix:PATH". */
  get endpoint() {
    if (this.path !== null) return UNIX_PREFIX + this.path;
    return String(this.host).includes(':') ? `[${this.host}]:${this.port}` : `${this.host}:${this.port}`;
  }

  /**
   * The features the server's hello listed (PROTOCOL.md "hello": "scenes",
   * "softbody", ...); [] for a server without hello (no features known);
   * null while nothing is known (before the handshake, with hello: false,
   * or hello refused before `auth`).
   */
  get features() {
    return this._hello ? this._hello.features : null;
  }

  /** The server's limits from its hello (lineBytes, instances, ...), or null. */
  get limits() {
    return this._hello ? this._hello.limits : null;
  }

  /** The server's version from its hello ("0.1.0"), or null. */
  get serverVersion() {
    return this._hello ? this._hello.version : null;
  }

  /** The server's whole hello reply, or null (not known, or no hello). */
  get helloReply() {
    return this._hello ? this._hello.reply : null;
  }

  /** Whether the server's hello listed `feature` (false when nothing is known). */
  supports(feature) {
    return this._hello !== null && this._hello.features.includes(feature);
  }

  /**
   * What the server granted on this connection: 'full', 'readonly', or null
   * before any `auth` (a client without a token sends none).
   */
  get access() {
    return this._access;
  }

  /** The token this client authenticates with (null: none). */
  get token() {
    return this._token;
  }

  /** 'open' while connected; also 'new', 'connecting', 'closed'. */
  get state() {
    return this._state;
  }

  /** Requests sent (or queued) and not answered yet. */
  get pendingRequests() {
    return this._pending.length;
  }

  /**
   * Counters: requests, replies, frames, events, skippedFrames,
   * missedFrames (shared-memory frames the server overwrote in its ring
   * before this client read them: not delivered), writes (socket.write()
   * calls: pipelined requests share them), drainWaits (how often
   * socket.write() said "full" and the client waited for 'drain' before
   * writing more), queuedRequests (request lines not yet written).
   */
  get stats() {
    return { ...this._stats, queuedRequests: this._writeQueue.length };
  }

  /**
   * The shared-memory ring this connection reads ({name, size}, as the
   * subscribe reply named it), or null.
   */
  get shm() {
    return this._ring === null ? null : { name: this._ring.name, size: this._ring.size };
  }

  /** A Promise resolved once the connection is closed, however it closed. */
  get closed() {
    return this._closed;
  }

  /**
   * Closes the connection now: requests still pending are rejected with
   * ConnectionClosed. Resolves when the socket is closed. Safe to call twice.
   * Use end() to wait for the pending replies first.
   */
  close() {
    if (this._state !== 'closed') {
      this._closeReason = 'client';
      this._teardown(null, 'clothd: connection closed by the client');
    }
    return this._closed;
  }

  /**
   * Closes gracefully: waits until every request made so far is answered
   * (their promises settle as usual), then closes.
   */
  async end() {
    const last = this._lastRequest;
    if (last) await last.catch(() => {});
    return this.close();
  }

  // ---- requests ---------------------------------------------------------

  /**
   * Sends {"id": n, "cmd": cmd, ...fields} and resolves with the reply
   * object (ok:true). An error reply rejects with ClothdError(code,
   * message). Fields whose value is undefined are left out.
   */
  request(cmd, fields) {
    if (typeof cmd !== 'string') return Promise.reject(new TypeError('request: cmd must be a string'));
    const id = this._nextId++;
    const msg = { id, cmd };
    for (const key of Object.keys(fields ?? {})) {
      if (key !== 'id' && key !== 'cmd' && fields[key] !== undefined) msg[key] = fields[key];
    }
    if (this._scene !== null && msg.scene === undefined && takesScene(cmd, msg)) msg.scene = this._scene;
    let line;
    try {
      line = `${JSON.stringify(msg, jsonReplacer)}\n`;
    } catch (err) {
      return Promise.reject(err);
    }
    const hook = cmd === 'subscribe' ? (reply) => this._onSubscribed(reply) : undefined;
    return this._enqueue(line, id, cmd, featuresNeeded(cmd, msg), hook);
  }

  // A subscribe reply, before its promise settles and before the frames
  // behind it are read: opens the ring a "shm" one names (kept while the
  // connection lives; the server has one). Returns the error to reject
  // with when it cannot.
  _onSubscribed(reply) {
    if (reply.ok !== true || reply.shm === undefined) return undefined;
    const ring = this._ring;
    if (ring !== null && ring.name === reply.shm?.name && ring.size === reply.shm?.size) return undefined;
    this._ring = null;
    if (ring !== null) ring.close();
    try {
      this._ring = new Ring(reply.shm);
    } catch (err) {
      if (err instanceof ClothdError) return err;
      return new ShmUnavailable(this.endpoint, `/dev/shm${reply.shm.name}`, err);
    }
    return undefined;
  }

  /**
   * Sends one raw line as it is ('\n' appended when missing) and resolves
   * with the next reply, whatever it is: an error reply is resolved, not
   * rejected, and its id is not checked. For protocol tests and tools. The
   * line must not be blank (the server does not answer blank lines) and
   * must be a single line.
   */
  rawRequest(line) {
    const text = Buffer.isBuffer(line) ? line.toString('utf8') : String(line);
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    if (body.includes('\n'))
      return Promise.reject(new TypeError('rawRequest: the line must not contain a newline'));
    if (/^[ \t\r]*$/.test(body))
      return Promise.reject(new TypeError('rawRequest: a blank line gets no reply'));
    return this._enqueue(`${body}\n`, undefined, null);
  }

  /**
   * Sends a binary request (kind 1 skin, 2 pin) and resolves with its JSON
   * reply, as request() does. Its request id is the client's next id (a
   * u32 in the header; beyond 2^32 - 1 it goes as 0 and the reply, then
   * without an id, is taken by its place).
   */
  _binaryRequest(cmd, kind, instance, count, flags, arrays) {
    const id = this._nextId++;
    const wireId = id <= 0xffffffff ? id : 0;
    let message;
    try {
      message = encodeBinaryRequest(kind, instance, wireId, count, flags, arrays);
    } catch (err) {
      return Promise.reject(err);
    }
    return this._enqueue(message, wireId === 0 ? undefined : id, wireId === 0 ? null : cmd, featuresNeeded(cmd, {}));
  }

  // Queues a request line. `needs`: the server features it needs, checked
  // now when the server's hello is in, else when it comes (the request
  // waits behind the handshake). `hook(reply)`: runs on the reply before
  // the promise settles; an Error it returns rejects the promise.
  _enqueue(line, id, cmd, needs, hook) {
    if (this._state === 'closed')
      return Promise.reject(new ConnectionClosed(this._closedMessage ?? 'clothd: the connection is closed'));
    if (this._state === 'new') this.connect().catch(() => {});
    if (needs && needs.length > 0 && !this._handshake) {
      const err = this._lacking(needs, cmd);
      if (err) return Promise.reject(err);
    }
    const entry = { id, cmd, needs: needs && needs.length > 0 && this._handshake ? needs : null, hook };
    const promise = new Promise((resolve, reject) => {
      entry.resolve = resolve;
      entry.reject = reject;
      this._pending.push(entry);
    });
    this._lastRequest = promise;
    this._stats.requests++;
    this._write(line);
    return promise;
  }

  // Requests are queued and written once per tick, joined in batches of
  // about WRITE_BATCH_BYTES: one syscall for many pipelined requests. When
  // socket.write() returns false (the socket's buffer is over its
  // high-water mark), nothing more is written until 'drain'; the queue
  // holds the rest (requests are never dropped).
  _write(line) {
    this._writeQueue.push(line);
    if (this._state === 'open' && !this._blocked && !this._flushScheduled) {
      this._flushScheduled = true;
      process.nextTick(() => {
        this._flushScheduled = false;
        this._flush();
      });
    }
  }

  _onDrain() {
    this._blocked = false;
    this._flush();
  }

  _flush() {
    if (this._state !== 'open' || this._blocked || this._writeQueue.length === 0) return;
    // During the handshake only its own lines (auth, hello) go out.
    const all = this._writeQueue;
    const n = this._handshake ? Math.min(this._handshakeLines, all.length) : all.length;
    if (n === 0) return;
    const lines = n === all.length ? all : all.slice(0, n);
    this._writeQueue = n === all.length ? [] : all.slice(n);
    let i = 0;
    while (i < lines.length) {
      let batch = lines[i++];
      // Lines are joined; a binary request (a Buffer) goes on its own.
      while (typeof batch === 'string' && i < lines.length && typeof lines[i] === 'string' &&
             batch.length < WRITE_BATCH_BYTES) batch += lines[i++];
      this._stats.writes++;
      if (!this._socket.write(batch)) {
        this._blocked = true;
        this._stats.drainWaits++;
        break;
      }
    }
    if (this._handshake) this._handshakeLines -= i;
    if (i < lines.length) this._writeQueue = lines.slice(i).concat(this._writeQueue);
  }

  // ---- incoming -----------------------------------------------------------

  _onData(chunk) {
    if (this._state === 'closed') return;
    let messages;
    try {
      messages = this._parser.push(chunk);
    } catch (err) {
      this._fatal(err);
      return;
    }
    for (const m of messages) {
      if (this._state === 'closed') return;
      if (m.kind === 'line') this._onLine(m.bytes);
      else this._onFrame(m.bytes);
    }
  }

  // Runs a listener-facing emit so that a throwing listener cannot break
  // the parser: the exception is rethrown asynchronously, as uncaught.
  _safeEmit(name, value) {
    try {
      this.emit(name, value);
    } catch (err) {
      process.nextTick(() => {
        throw err;
      });
    }
  }

  _onLine(bytes) {
    let text = bytes.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    let reply;
    try {
      reply = JSON.parse(text);
    } catch (err) {
      this._fatal(new ProtocolError(`reply: not valid JSON (${err.message}): ${truncate(text)}`));
      return;
    }
    if (reply === null || typeof reply !== 'object' || Array.isArray(reply)) {
      this._fatal(new ProtocolError(`reply: not a JSON object: ${truncate(text)}`));
      return;
    }
    if ('event' in reply && !('ok' in reply)) {
      this._stats.events++;
      this._safeEmit('event', reply);
      return;
    }
    const p = this._pending.shift();
    if (!p) {
      this._fatal(new ProtocolError(`reply: no request is waiting for ${truncate(text)}`));
      return;
    }
    this._stats.replies++;
    if (Array.isArray(reply.warnings)) this._warn(reply, p.cmd);
    if (p.cmd === null) {
      p.resolve(reply); // rawRequest: any reply, unchecked
      return;
    }
    if (!('id' in reply)) {
      // The server answers without an id only when it could not read it
      // (line_too_long, parse_error): that is still this request's reply.
      if (reply.ok !== false) {
        this._fatal(new ProtocolError(`reply: expected id ${p.id}, got a reply without id: ${truncate(text)}`), p);
        return;
      }
    } else if (reply.id !== p.id) {
      this._fatal(new ProtocolError(`reply: expected id ${p.id} (${p.cmd}), got id ${JSON.stringify(reply.id)}: ${truncate(text)}`), p);
      return;
    }
    if (p.hook) {
      const err = p.hook(reply);
      if (err) {
        p.reject(err);
        return;
      }
    }
    if (reply.ok === true) {
      p.resolve(reply);
    } else {
      const e = reply.error && typeof reply.error === 'object' ? reply.error : {};
      p.reject(errorFromReply(String(e.code ?? 'internal'), String(e.message ?? ''), reply));
    }
  }

  // A reply's warnings, one 'warning' event each (process.emitWarning when
  // nobody listens: a misspelt option must not go unseen).
  _warn(reply, cmd) {
    for (const text of reply.warnings) {
      const w = new ClothdWarning(String(text), cmd, reply);
      if (this.listenerCount('warning') > 0) this._safeEmit('warning', w);
      else process.emitWarning(`clothd: ${w.message}`, 'ClothdWarning');
    }
  }

  _onFrame(message) {
    const version = message[4] | (message[5] << 8);
    const flags = message[6] | (message[7] << 8);
    const unknownFlags = flags & ~(FLAGS_KNOWN | FLAG_SHARED);
    if (version !== FRAME_VERSION || unknownFlags) {
      // PROTOCOL.md: a frame of another version, or with an unknown flag,
      // is skipped using its length (the server sends none unless asked).
      this._stats.skippedFrames++;
      const what = version !== FRAME_VERSION ? `version ${version}` : `unknown flags 0x${unknownFlags.toString(16).padStart(4, '0')}`;
      this._safeEmit('warning', new ProtocolError(`frame: skipped a frame of ${what}`));
      return;
    }
    let frame;
    try {
      const bytes = flags & FLAG_SHARED ? this._fromRing(message) : message;
      if (bytes === null) {
        this._stats.missedFrames++;
        return;
      }
      frame = decodeFrame(bytes);
    } catch (err) {
      this._fatal(err);
      return;
    }
    this._stats.frames++;
    this._safeEmit('frame', frame);
    for (const it of this._iterators) it._push(frame);
  }

  // The frame a shared-memory reference names, copied out of the ring (a
  // Buffer of its own), or null when it is missed: the server overwrote it
  // before the copy was done, or this connection has no ring (its
  // subscribe rejected with ShmUnavailable). Throws ProtocolError for a
  // reference that is not one (not 56 bytes, naming no frame).
  _fromRing(ref) {
    const r = decodeReference(ref);
    if (this._ring === null) return null;
    const frame = this._ring.read(r);
    if (frame === null) return null;
    if (!frame.subarray(12, FRAME_HEADER_SIZE).equals(ref.subarray(12, FRAME_HEADER_SIZE)) ||
        frame.readUInt16LE(6) !== r.flags || frame.readUInt32LE(8) !== r.length)
      throw new ProtocolError(`frame: the ring's frame at ${r.position} is not the one its reference names`);
    return frame;
  }

  // The stream broke the contract: reject everything with `err`, close.
  _fatal(err, first) {
    if (first) first.reject(err);
    this._closeReason = err;
    this._teardown(err, err.message, err);
  }

  _teardown(cause, message, protocolError, rejectWith) {
    if (this._state === 'closed') return;
    this._state = 'closed';
    this._closedMessage = message;
    const rejection = protocolError ?? rejectWith ?? new ConnectionClosed(message, cause ? { cause } : undefined);
    for (const p of this._pending.drain()) p.reject(rejection);
    this._writeQueue = [];
    if (this._rejectConnect) {
      this._rejectConnect(cause ?? new ConnectionClosed(message));
      this._rejectConnect = null;
    }
    if (this._socket) this._socket.destroy();
    if (this._ring !== null) {
      this._ring.close();
      this._ring = null;
    }
    for (const it of [...this._iterators]) it._finish(protocolError ?? null);
    const socket = this._socket;
    const finish = () => {
      if (protocolError && this.listenerCount('error') > 0) this.emit('error', protocolError);
      this.emit('close', cause ?? undefined);
      this._resolveClosed();
    };
    if (socket && !socket.closed) socket.once('close', finish);
    else process.nextTick(finish);
  }

  // ---- frames -------------------------------------------------------------

  /**
   * An async iterator over the frames received from now on:
   *
   *   const frames = client.frames();          // before subscribe: the first
   *   await client.subscribe({ instance: id }); // frame follows the reply
   *   for await (const f of frames) { ... }
   *
   * options: maxQueue (256; a slow consumer keeps the newest frames, the
   * iterator's `dropped` counts the others), instance (only that
   * instance's frames), signal (an AbortSignal that ends the iteration by
   * throwing its reason). Ends when the connection closes.
   */
  frames(options = {}) {
    const it = new FrameIterator(this, options);
    if (this._state === 'closed') it._finish(null);
    else if (!it.done) this._iterators.add(it);
    return it;
  }

  // ---- commands (PROTOCOL.md, Commands) -----------------------------------

  /**
   * Creates an instance of `type` ("cloth" or "softbody") with the create
   * fields in `opts`; resolves with its id. createCloth, createSoftbody and
   * createMeshCloth name the fields of each. opts.scene: the scene it
   * belongs to ("default" when unset); opts.ephemeral: true destroys it
   * when this connection closes (a script leaves nothing behind).
   */
  async create(type = 'cloth', opts = {}) {
    const fields = { ...opts, type };
    for (const k of VECTOR_FIELDS) if (k in fields) fields[k] = vec(fields[k]);
    const reply = await this.request('create', fields);
    return reply.instance;
  }

  /**
   * Creates a cloth; resolves with its instance id. opts (all optional),
   * named as in PROTOCOL.md: the layout (width, height, spacing, origin,
   * right, down) and the options that `set` can change later (mass,
   * stiffness or stretchCompliance, bendStiffness or bendCompliance, damping
   * or velocityRetention, solverIterations or iterations, substeps, gravity,
   * thickness, particleMass, windModel, airDensity, drag, lift, tethers,
   * tetherScale, sleepThreshold). Other fields are sent as they are.
   */
  createCloth(opts = {}) {
    return this.create('cloth', opts);
  }

  /**
   * Creates a soft body (the seed's SoftBodyDescriptor); resolves with its
   * id. Either a generated shape, `shape: 'ball'` (radius, resolution,
   * center) or `shape: 'box'` (size, cells, origin), or a mesh: `vertices`
   * (vec3s or flat) and `tetrahedra` (4 indices each, positively
   * oriented). The cloth options apply with the soft-body defaults, and
   * volumeStiffness or volumeCompliance, youngsModulus, poissonRatio.
   */
  createSoftbody(opts = {}) {
    const fields = { ...opts };
    try {
      if (fields.vertices !== undefined) {
        // vec3s or flat: the soft body's mesh goes as vec3s.
        const flat = flatFloats(fields.vertices, 'vertices');
        fields.vertices = [];
        for (let i = 0; i + 2 < flat.length; i += 3) fields.vertices.push([flat[i], flat[i + 1], flat[i + 2]]);
      }
      if (fields.tetrahedra !== undefined) fields.tetrahedra = idList(fields.tetrahedra);
    } catch (err) {
      return Promise.reject(err);
    }
    for (const k of ['size', 'center']) if (k in fields) fields[k] = vec(fields[k]);
    if ('cells' in fields) fields.cells = Array.from(fields.cells, Number);
    return this.create('softbody', fields);
  }

  /**
   * The handshake again (the client sends one on connect and keeps it:
   * features, limits, serverVersion): {server, version, protocol, strict,
   * commands, features, limits}. `strict` true asks the server to refuse,
   * on this connection, a request with a member it does not read; false
   * turns it back (undefined: unchanged).
   */
  async hello(opts = {}) {
    const reply = await this.request('hello', { strict: opts.strict });
    if (opts.strict !== undefined) this._strict = Boolean(opts.strict);
    this._keepHello(reply);
    return reply;
  }

  /**
   * Creates a cloth cut as a triangle mesh (a cape, a skirt, a flag with a
   * hole); resolves with its id. `vertices`: vec3s or a flat list (x, y, z
   * per vertex; a Float32Array works), `triangles`: 3 indices each (any
   * winding). opts: `uvs` (2 per vertex, handed back by topology), the
   * cloth options but the grid's layout, and the painted properties
   * (maxDistance, backstopDistance, backstopRadius, invMassScale,
   * stretchComplianceScale, bendComplianceScale: a number, or one per
   * vertex).
   */
  createMeshCloth(vertices, triangles, opts = {}) {
    let fields;
    try {
      fields = { ...opts, vertices: flatFloats(vertices, 'vertices'), triangles: idList(triangles) };
    } catch (err) {
      return Promise.reject(err);
    }
    if (opts.uvs !== undefined) fields.uvs = Array.from(opts.uvs);
    return this.create('cloth', fields);
  }

  /**
   * The garment's animated pose for the next step: one skinned position
   * per particle and optionally the skin's normals (pointing away from the
   * body; omitted: the server derives them), as vec3s or flat lists (a
   * Float32Array is sent without a copy into numbers). Sent as the binary
   * request (24 bytes a vertex with normals, no JSON) unless opts.json.
   * A non-finite value is refused by the server (binary) or turned into
   * null by JSON (then refused as a type error).
   */
  async skin(instance, positions, normals, opts = {}) {
    const pos = flatFloats(positions, 'positions');
    const nrm = flatFloats(normals, 'normals');
    if (pos === undefined) throw new TypeError('skin: positions required');
    if (opts.json) {
      await this.request('skin', { instance, positions: pos, normals: nrm });
      return;
    }
    if (nrm !== undefined && nrm.length !== pos.length)
      throw new TypeError(`skin: ${nrm.length / 3} normals for ${pos.length / 3} positions`);
    const arrays = [Float32Array.from(pos)];
    if (nrm !== undefined) arrays.push(Float32Array.from(nrm));
    await this._binaryRequest('skin', REQUEST_SKIN, instance, pos.length / 3, nrm ? REQUEST_FLAG_NORMALS : 0, arrays);
  }

  /**
   * Pins many particles at positions (vec3s or flat) in one binary request,
   * the twin of pin(instance, particles, {positions}); resolves with the
   * `pinned` count.
   */
  async pinBulk(instance, particles, positions) {
    const ids = Uint32Array.from(particles);
    const pos = flatFloats(positions, 'positions') ?? [];
    if (pos.length !== 3 * ids.length)
      throw new TypeError(`pinBulk: ${pos.length / 3} positions for ${ids.length} particles`);
    const reply = await this._binaryRequest('pin', REQUEST_PIN, instance, ids.length, 0, [ids, Float32Array.from(pos)]);
    return reply.pinned;
  }

  /**
   * Moves the whole instance rigidly, p -> pivot + rotation (p - pivot) +
   * translation (opts.translation, opts.rotation a quaternion [x, y, z, w],
   * opts.pivot; each default identity): particles with their velocities,
   * pins, skin, transforms and attached colliders, with no velocity spike.
   */
  async teleport(instance, opts = {}) {
    await this.request('teleport', {
      instance,
      translation: vec(opts.translation),
      rotation: vec(opts.rotation),
      pivot: vec(opts.pivot),
    });
  }

  /**
   * What a renderer needs once: `triangles` (Uint32Array, 3 per triangle,
   * counter-clockwise from outside), `uvs` (Float32Array, 2 per particle:
   * a grid, or a mesh cloth created with uvs; else null), `painted` (each
   * painted property as a Float32Array, one per particle: maxDistance, ...)
   * and `skinned` (whether the instance has had a skin).
   */
  async topology(instance) {
    const reply = await this.request('topology', { instance });
    const painted = {};
    for (const name of PAINTED) if (Array.isArray(reply[name])) painted[name] = Float32Array.from(reply[name]);
    return {
      instance: reply.instance,
      type: reply.type,
      particles: reply.particles,
      triangles: Uint32Array.from(reply.triangles ?? []),
      uvs: Array.isArray(reply.uvs) ? Float32Array.from(reply.uvs) : null,
      painted,
      skinned: reply.skinned ?? false,
      reply,
    };
  }

  /**
   * Changes a live instance's options (any create option but the layout);
   * only the fields given change. Wakes a sleeping instance. Painted
   * properties take a number, one value per vertex, or null (unpainted).
   */
  async set(instance, opts = {}) {
    const fields = { ...opts, instance };
    for (const k of VECTOR_FIELDS) if (k in fields) fields[k] = vec(fields[k]);
    await this.request('set', fields);
  }

  /**
   * Creates or moves the instance's named transform: `position` and
   * `rotation` (a quaternion [x, y, z, w], default identity). Attached
   * particles and colliders follow it. opts.inertiaFrame: true makes it
   * the instance's inertia frame (the motion linearInertia and
   * angularInertia scale), false unmarks it.
   */
  async transform(instance, name, position, rotation, opts = {}) {
    await this.request('transform', {
      instance,
      name,
      position: vec(position),
      rotation: vec(rotation),
      inertiaFrame: opts.inertiaFrame,
    });
  }

  /**
   * Pins particles (a number or an array) and attaches them to the
   * transform `name`, at opts.offset / opts.offsets local to it (default:
   * where they are now). Resolves with the `attached` count.
   */
  async attach(instance, name, particles, opts = {}) {
    const fields = typeof particles === 'number'
      ? { instance, name, particle: particles, offset: vec(opts.offset), offsets: vecList(opts.offsets) }
      : { instance, name, particles: idList(particles), offsets: vecList(opts.offsets), offset: vec(opts.offset) };
    const reply = await this.request('attach', fields);
    return reply.attached;
  }

  /**
   * Destroys an instance (a number), or opts.instances, or (opts.scene
   * alone) every instance of a scene; their ids never work again. With ids
   * and a scene, each must be in it (rejected `not_found`). Resolves with
   * the destroyed ids ([] for a scene with none: not an error).
   */
  async destroy(instance) {
    const o = typeof instance === 'object' && instance !== null ? instance : { instance };
    const reply = await this.request('destroy', {
      instance: o.instance,
      instances: idList(o.instances),
      scene: o.scene,
    });
    return reply.destroyed ?? (o.instance !== undefined ? [o.instance] : []);
  }

  /**
   * Pins one particle (a number) or several (an array). Without
   * opts.position / opts.positions they are pinned where they are.
   * Resolves with the server's `pinned` count.
   */
  async pin(instance, particles, opts = {}) {
    const fields = typeof particles === 'number'
      ? { instance, particle: particles, position: vec(opts.position), positions: vecList(opts.positions) }
      : { instance, particles: idList(particles), positions: vecList(opts.positions), position: vec(opts.position) };
    const reply = await this.request('pin', fields);
    return reply.pinned;
  }

  /** Unpins one particle or several; resolves with `unpinned`. */
  async unpin(instance, particles) {
    const fields = typeof particles === 'number' ? { instance, particle: particles } : { instance, particles: idList(particles) };
    const reply = await this.request('unpin', fields);
    return reply.unpinned;
  }

  /**
   * Sets an instance's wind, or the server-wide global wind when instance
   * is omitted. Resolves with the wind as stored ([x, y, z]).
   */
  async wind(wind, instance) {
    const reply = await this.request('wind', { instance, wind: vec(wind) });
    return reply.wind;
  }

  /** Sets an instance's gravity (m/s²). */
  async gravity(instance, gravity) {
    await this.request('gravity', { instance, gravity: vec(gravity) });
  }

  /**
   * Adds a collider: opts.type is "sphere", "capsule", "plane",
   * "taperedCapsule" or "box"; position, normal, radius, height, radius2 (a
   * tapered capsule's +normal end), halfExtents and rotation (a box's unit
   * quaternion [x, y, z, w]), friction, staticFriction, coupling (two-way
   * coupling, impulses in step replies) and attachment (a transform name
   * the collider follows) are optional. Resolves with the collider id.
   */
  async addCollider(instance, opts = {}) {
    const reply = await this.request('addCollider', {
      ...opts,
      instance,
      position: vec(opts.position),
      normal: vec(opts.normal),
      halfExtents: vec(opts.halfExtents),
      rotation: vec(opts.rotation),
    });
    return reply.collider;
  }

  /**
   * A limb from joint `start` (radius) to joint `end` (radius2): a
   * "taperedCapsule" whose end spheres sit on the joints (position,
   * normal and height derived; other addCollider options in opts).
   */
  async addTaperedCapsule(instance, start, end, radius, radius2, opts = {}) {
    const a = Array.from(start), b = Array.from(end);
    const axis = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    const length = Math.hypot(axis[0], axis[1], axis[2]);
    return this.addCollider(instance, {
      ...opts,
      type: 'taperedCapsule',
      position: [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2],
      normal: length > 0 ? axis : undefined,
      radius,
      radius2,
      height: length + radius + radius2,
    });
  }

  /** Moves and/or turns a collider (opts.position, opts.normal; a box: opts.rotation). */
  async moveCollider(instance, collider, opts = {}) {
    await this.request('moveCollider', {
      instance, collider, position: vec(opts.position), normal: vec(opts.normal), rotation: vec(opts.rotation),
    });
  }

  /** Removes a collider. */
  async removeCollider(instance, collider) {
    await this.request('removeCollider', { instance, collider });
  }

  /** Enables (default) or disables an instance; resolves with the new state. */
  async enable(instance, enabled = true) {
    const reply = await this.request('enable', { instance, enabled });
    return reply.enabled;
  }

  /**
   * Steps every enabled instance (or opts.instances / opts.instance) once by
   * opts.dt (default 1/60 s; a number is taken as dt). opts.budgetMs: a
   * soft time budget (0: none; unset: the server's --step-budget-ms), which
   * steps the instances of lowest `priority` at a coarser level of detail
   * when the step would overrun it. Resolves with the reply: {stepped,
   * unstable, sleeping, impulses}, with a budget also {budgetMs,
   * predictedMs, actualMs, degraded: [{instance, lod}]}.
   */
  step(opts = {}) {
    const o = typeof opts === 'number' ? { dt: opts } : opts;
    return this.request('step', {
      dt: o.dt,
      instance: o.instance,
      instances: idList(o.instances),
      budgetMs: o.budgetMs,
      scene: o.scene,
    });
  }

  /**
   * An instance's full state: the reply's members, with `positions` as a
   * Float32Array (3 per particle, exactly the server's float32 values) and
   * the raw reply as `reply`. opts.velocities / opts.normals add each
   * particle's velocity and unit normal (Float32Arrays; null when not asked).
   */
  async get(instance, opts = {}) {
    const reply = await this.request('get', {
      instance,
      velocities: opts.velocities || undefined,
      normals: opts.normals || undefined,
    });
    return {
      instance: reply.instance,
      type: reply.type,
      scene: reply.scene ?? 'default',
      ephemeral: reply.ephemeral ?? false,
      width: reply.width,
      height: reply.height,
      frame: reply.frame,
      time: reply.time,
      enabled: reply.enabled,
      unstable: reply.unstable,
      sleeping: reply.sleeping ?? false,
      lod: reply.lod ?? 0,
      currentLod: reply.currentLod ?? reply.lod ?? 0,
      degraded: reply.degraded ?? false,
      priority: reply.priority ?? 0,
      positions: Float32Array.from(reply.positions ?? []),
      pinned: reply.pinned ?? [],
      colliders: reply.colliders ?? [],
      selfCollision: reply.selfCollision ?? null,
      velocities: reply.velocities ? Float32Array.from(reply.velocities) : null,
      normals: reply.normals ? Float32Array.from(reply.normals) : null,
      reply,
    };
  }

  /**
   * Subscribes to frames of opts.instance, opts.instances, (opts.scene
   * alone) every instance of a scene, those created in it later included,
   * or (none) every instance. opts.quantize: 16-bit positions in the frame's bounding box;
   * opts.every: only frames whose number is a multiple of it; opts.channels:
   * what frames carry besides the positions ("velocities", "normals"; see
   * CHANNELS), decoded as frame.velocities and frame.normals; opts.shm:
   * true (a process on clothd's host, as clothd's user; the server lists
   * the feature "shm") takes the frames out of the server's shared-memory
   * ring, delivered as the same frames (one the server overwrote before it
   * was read is not delivered: stats.missedFrames), and rejects with
   * ShmUnavailable when the ring cannot be opened. Resolves with the reply
   * ({instances: [...]}, {scene, instances} or {all: true}; with shm,
   * `shm`: the ring's name and size). The current frame of each
   * instance follows the reply at once: create the frames() iterator or the
   * 'frame' listener before subscribing to see it.
   */
  subscribe(opts = {}) {
    return this.request('subscribe', {
      instance: opts.instance,
      instances: idList(opts.instances),
      scene: opts.scene,
      quantize: opts.quantize,
      every: opts.every,
      channels: opts.channels === undefined ? undefined : Array.from(opts.channels),
      shm: opts.shm,
    });
  }

  /**
   * Drops subscriptions: opts.instance, opts.instances, opts.scene (the
   * scene's and its instances'), or (none) all.
   */
  async unsubscribe(opts = {}) {
    await this.request('unsubscribe', {
      instance: opts.instance,
      instances: idList(opts.instances),
      scene: opts.scene,
    });
  }

  /**
   * Writes the snapshot `name` (1-64 of A-Z a-z 0-9 . _ -, not starting
   * with '.') of every instance, or of opts.instances / opts.instance, or
   * of every instance of opts.scene, to the server's --data-dir (a server
   * without one lacks the "snapshots" feature: FeatureMissing), or with
   * opts.memory into this connection's memory (no --data-dir needed; gone
   * when it closes). Resolves with the reply (name, instances, bytes);
   * rejects `internal` when the disk refuses (nothing is damaged).
   */
  save(name, opts = {}) {
    return this.request('save', {
      name,
      instance: opts.instance,
      instances: idList(opts.instances),
      scene: opts.scene,
      memory: opts.memory ? true : undefined,
    });
  }

  /**
   * Loads the snapshot `name`: its instances come back under their saved
   * ids (rejected `invalid_argument` if one is in use), or with
   * opts.replace they become the whole world; opts.memory: this
   * connection's memory snapshot. Resolves with the loaded ids.
   */
  async load(name, opts = {}) {
    const reply = await this.request('load', {
      name, replace: opts.replace ? true : undefined, memory: opts.memory ? true : undefined,
    });
    return reply.instances;
  }

  /**
   * Starts the journal `name` (.cdj in the server's --data-dir) of every
   * instance, or of opts.instances / opts.instance; with opts.stop ends
   * the one being written. Resolves with the reply.
   */
  record(name, opts = {}) {
    if (opts.stop) return this.request('record', { stop: true });
    return this.request('record', {
      name,
      instance: opts.instance,
      instances: idList(opts.instances),
      scene: opts.scene,
    });
  }

  /**
   * Rebuilds the journal's instances under new ids at frame opts.to (all of
   * it without), bit for bit. Resolves with the reply: instances (new ids),
   * recorded (their recorded ids), frames, journalFrames, complete, warning.
   */
  replay(name, opts = {}) {
    return this.request('replay', { name, to: opts.to });
  }

  /**
   * The server's status reply (instances, each with its scene; workers,
   * globalWind, version, debug, scenes, text); opts.scene: only that
   * scene's instances.
   */
  status(opts = {}) {
    return this.request('status', { scene: opts.scene });
  }

  /**
   * Ties the scene `name` to this connection (opts.ephemeral true: when it
   * closes, every instance of the scene is destroyed, whoever created it),
   * lets go of it (false), or only asks (unset). Resolves with the reply:
   * {scene, instances, ephemeral, owned}.
   */
  scene(name, opts = {}) {
    return this.request('scene', { scene: name, ephemeral: opts.ephemeral });
  }

  /**
   * Every scene (or opts.scene's entry), sorted by name: resolves with
   * [{scene, instances, ephemeral}].
   */
  async scenes(opts = {}) {
    const reply = await this.request('scenes', { scene: opts.scene });
    return reply.scenes;
  }

  /**
   * The server's counters since it started (the `stats` reply): connections,
   * instances by state, particles, steps (with the durationSeconds
   * histogram), bytes and frames sent and skipped, requests by command,
   * errors by code, version, simd, workers, uptimeSeconds. Answered at once
   * even mid-step; allowed with the read-only token. (Named serverStats:
   * the `stats` property holds this client's own counters.)
   */
  serverStats() {
    return this.request('stats');
  }

  /**
   * Sends `ping`; resolves with the round trip in milliseconds (the reply
   * is {"ok":true,"pong":true}). Allowed with the read-only token.
   */
  async ping() {
    const t0 = performance.now();
    const reply = await this.request('ping');
    if (reply.pong !== true) throw new ProtocolError(`ping: expected "pong": true, got ${truncate(JSON.stringify(reply))}`);
    return performance.now() - t0;
  }

  /**
   * Presents `token` on this connection; resolves with the access granted
   * ('full' or 'readonly'; a server without tokens grants 'full' to any).
   * On success the client keeps the token. A wrong token rejects with the
   * ClothdError "unauthorized" ("token: wrong token") and leaves the access
   * as it was; the server then pauses the connection (100 ms, doubling to
   * 2 s) and closes it at the 10th bad token.
   */
  async auth(token) {
    const access = await this._authRequest(token);
    this._token = String(token);
    // A hello refused before `auth` is asked again: now the features are known.
    if (this._hello === null && this._sayHello) this._keepHello(await this.request('hello'));
    return access;
  }

  _authRequest(token) {
    return this.request('auth', { token: String(token) }).then((reply) => {
      this._access = reply.access;
      return reply.access;
    });
  }

  /** The server-wide global wind (read from status). */
  async globalWind() {
    const reply = await this.status();
    return reply.globalWind;
  }

  /**
   * Sets (true/false) or, without an argument, reads the viewers' debug
   * overlay flag. Subscribed connections receive an 'event' when it changes.
   */
  async debug(enabled) {
    const reply = await this.request('debug', { enabled });
    return reply.enabled;
  }
}

// After Client: lib/shard.js reaches it through this module.
const { Scene, ShardedClient } = require('./lib/shard.js');

module.exports = {
  Client,
  ClothdError,
  ParseError,
  UnknownCommand,
  InvalidArgument,
  NotFound,
  LimitExceeded,
  LineTooLong,
  InternalError,
  Unauthorized,
  ClothdWarning,
  ProtocolError,
  ConnectionClosed,
  EndpointUnavailable,
  IncompatibleServer,
  FeatureMissing,
  ShmUnavailable,
  Scene,
  ShardedClient,
  SCENE_COMMANDS,
  rendezvousWeight,
  placeScene,
  checkSceneName,
  parseEndpoint,
  UNIX_PATH_MAX,
  FrameIterator,
  decodeFrame,
  decodeHeader,
  decodeReference,
  encodeBinaryRequest,
  frameSize,
  quantizedFrameSize,
  frameSizeFlags,
  octahedralDecode,
  ERROR_CODES,
  ERROR_CLASSES,
  FEATURES,
  FRAME_MAGIC,
  FRAME_VERSION,
  FRAME_HEADER_SIZE,
  FLAG_QUANTIZED,
  FLAG_VELOCITIES,
  FLAG_NORMALS,
  FLAG_SHARED,
  SHM_REFERENCE_SIZE,
  CHANNELS,
  VERSION,
  TOKEN_ENV,
};
