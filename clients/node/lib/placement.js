'use strict';
// Where a scene lives when scenes are spread over several clothd servers
// with no coordinator (PROTOCOL.md, "Sharding"): rendezvous (highest random
// weight) hashing of the scene name over the endpoint list. Pure functions,
// the same numbers as the Python and C clients (protocol/placement_vectors.json).
//
// weight(endpoint, scene) = fmix64(fnv1a64(utf8(endpoint) || 0x00 || utf8(scene)))
// as an unsigned 64-bit BigInt; a scene goes to the endpoint of the highest
// weight, a tie to the endpoint whose UTF-8 bytes sort first.

const MASK64 = (1n << 64n) - 1n;
const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;

/**
 * The commands that accept "scene" (wind only with an instance): `scene`
 * names the scene it asks about or ties, `scenes` lists only that scene's
 * entry; the others act in the scene.
 */
const SCENE_COMMANDS = Object.freeze(new Set([
  'create', 'destroy', 'pin', 'unpin', 'wind', 'gravity', 'addCollider', 'moveCollider',
  'removeCollider', 'enable', 'step', 'get', 'subscribe', 'unsubscribe', 'status', 'set',
  'transform', 'attach', 'topology', 'skin', 'teleport', 'save', 'record', 'scene', 'scenes',
]));

const SCENE_NAME = /^[A-Za-z0-9._:-]{1,64}$/;

/** Whether a request message of `cmd` takes the scene a Scene stamps. */
function takesScene(cmd, msg) {
  return SCENE_COMMANDS.has(cmd) && (cmd !== 'wind' || msg.instance !== undefined);
}

/** 64-bit FNV-1a of the bytes (a Uint8Array or Buffer), as a BigInt. */
function fnv1a64(bytes) {
  let h = FNV64_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV64_PRIME) & MASK64;
  return h;
}

/** MurmurHash3's 64-bit finaliser, on a BigInt below 2^64. */
function fmix64(h) {
  h ^= h >> 33n;
  h = (h * 0xff51afd7ed558ccdn) & MASK64;
  h ^= h >> 33n;
  h = (h * 0xc4ceb9fe1a85ec53n) & MASK64;
  return h ^ (h >> 33n);
}

/** The weight of `scene` on `endpoint`: an unsigned 64-bit BigInt. */
function rendezvousWeight(endpoint, scene) {
  return fmix64(fnv1a64(Buffer.concat([Buffer.from(endpoint, 'utf8'), Buffer.alloc(1), Buffer.from(scene, 'utf8')])));
}

/**
 * The endpoint of `endpoints` that serves `scene` (the order of the list
 * does not matter). Adding an endpoint moves only the scenes it now wins,
 * about 1/N, onto itself; removing one moves only its own scenes.
 */
function placeScene(endpoints, scene) {
  let best = null;
  let bestWeight = -1n;
  for (const endpoint of endpoints) {
    const weight = rendezvousWeight(endpoint, scene);
    if (weight > bestWeight
        || (weight === bestWeight && Buffer.compare(Buffer.from(endpoint), Buffer.from(best)) < 0)) {
      best = endpoint;
      bestWeight = weight;
    }
  }
  if (best === null) throw new RangeError('placeScene: no endpoints');
  return best;
}

/** `name` when it is a scene name (1 to 64 of A-Z a-z 0-9 . _ : -); else throws. */
function checkSceneName(name) {
  if (typeof name !== 'string') throw new TypeError(`scene: expected a string, got ${typeof name}`);
  if (!SCENE_NAME.test(name))
    throw new RangeError(`scene: ${JSON.stringify(name)} is not 1 to 64 of A-Z a-z 0-9 . _ : -`);
  return name;
}

/** How an endpoint names a Unix-domain socket: "unix:/run/clothd.sock". */
const UNIX_PREFIX = 'unix:';
/**
 * The longest Unix socket path a client accepts (bytes): sun_path holds
 * 104 bytes on macOS and the BSDs, 108 on Linux, one of them the
 * terminating zero. (libuv would cut a longer path short and connect to
 * whatever the shorter one names.)
 */
const UNIX_PATH_MAX = ['darwin', 'freebsd', 'openbsd', 'netbsd'].includes(process.platform) ? 103 : 107;

/** `path` when it can name a Unix socket; else throws naming `what` (the option). */
function checkUnixPath(path, what = 'path') {
  if (typeof path !== 'string') throw new TypeError(`${what}: expected a string, got ${typeof path}`);
  const size = Buffer.byteLength(path);
  if (size === 0 || path.includes('\0'))
    throw new RangeError(`${what}: ${JSON.stringify(path)} is not a path (empty, or holds a zero byte)`);
  if (size > UNIX_PATH_MAX && process.platform !== 'win32')
    throw new RangeError(`${what}: the path is ${size} bytes; a Unix socket path holds at most ${UNIX_PATH_MAX} (sun_path)`);
  return path;
}

/**
 * "host:port" ("[::1]:7878" for IPv6) as {host, port}, or "unix:PATH" as
 * {path} (net.connect's options either way); throws naming the endpoint.
 * "unix:" followed by digits only stays a TCP endpoint (a host named unix):
 * write "unix:./7878" for a socket file of that name.
 */
function parseEndpoint(endpoint) {
  if (typeof endpoint !== 'string')
    throw new TypeError(`endpoint: expected a "host:port" string, got ${typeof endpoint}`);
  if (endpoint.startsWith(UNIX_PREFIX) && !/^\d+$/.test(endpoint.slice(UNIX_PREFIX.length))) {
    try {
      return { path: checkUnixPath(endpoint.slice(UNIX_PREFIX.length)) };
    } catch (err) {
      throw new RangeError(`endpoint ${JSON.stringify(endpoint.slice(0, 80))}: ${err.message}`);
    }
  }
  const colon = endpoint.lastIndexOf(':');
  let host = colon > 0 ? endpoint.slice(0, colon) : '';
  const port = endpoint.slice(colon + 1);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (colon < 0 || host === '' || host.includes('\0') || !/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    throw new RangeError(`endpoint ${JSON.stringify(endpoint)}: expected "host:port" with a port from 1 to 65535, or "unix:PATH"`);
  return { host, port: Number(port) };
}

module.exports = {
  SCENE_COMMANDS,
  takesScene,
  fnv1a64,
  fmix64,
  rendezvousWeight,
  placeScene,
  checkSceneName,
  parseEndpoint,
  checkUnixPath,
  UNIX_PREFIX,
  UNIX_PATH_MAX,
};
