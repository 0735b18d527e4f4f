// Who may talk to the viewer relay, and which files it serves.
//
// The relay listens on a loopback address by default, and a browser lets any
// web page reach loopback. Two rules keep other pages out:
//
// - Host: every HTTP request (the page, /api/*, /vendor/*, the WebSocket
//   upgrade) must name the relay itself: its own address and port, a
//   loopback alias (localhost, 127.0.0.1, [::1]) when it listens on
//   loopback, any of the machine's addresses when it listens on all of them,
//   or a name given with --allow-host. A DNS-rebinding page reaches the relay
//   under the attacker's own name, which fails this rule.
// - Origin: the WebSocket upgrade must come from the relay's own page: an
//   Origin "http://" + a host that passes the rule above, or one given with
//   --allow-origin (a reverse proxy serving the page under https). Browsers
//   always send Origin on a WebSocket; a page elsewhere cannot forge it.
//
// Static files: a request path maps to a file under one of the served
// folders or to nothing (404). Paths are decoded segment by segment; a
// segment "." or "..", an encoded slash, backslash or NUL, or a raw
// backslash refuses the path outright (even when it would stay inside the
// folder), and the file found must really lie under its folder.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const LOOPBACK_ALIASES = ['localhost', '127.0.0.1', '[::1]'];

// Whether an IP address (or "localhost") is a loopback address.
export function isLoopback(address) {
  const a = String(address).toLowerCase().replace(/^\[|\]$/g, '');
  if (a === 'localhost') return true;
  if (net.isIPv4(a)) return a.startsWith('127.');
  if (net.isIPv6(a)) {
    if (canonicalName(a) === '[::1]') return true;
    const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
    return !!m && m[1].startsWith('127.');
  }
  return false;
}

function isWildcard(address) {
  const a = String(address).replace(/^\[|\]$/g, '');
  return a === '0.0.0.0' || a === '::' || a === '0:0:0:0:0:0:0:0';
}

// A host name or address the way a browser writes it in a URL: lowercase,
// IPv6 in brackets and compressed, IPv4 in dotted decimal; null when it is
// not a plain host.
function canonicalName(name) {
  const s = String(name);
  if (s === '' || /[\s/?#@\\%]/.test(s)) return null;
  try {
    return new URL(`http://${net.isIPv6(s) ? `[${s}]` : s}/`).hostname;
  } catch {
    return null;
  }
}

// Splits an authority ("host", "host:port", "[v6]:port") into a canonical
// name and a port (80 when it has none, as http:// means); null when
// malformed.
export function parseAuthority(text) {
  const s = String(text ?? '');
  if (s === '' || s.length > 300 || /[\s/?#@\\%]/.test(s)) return null;
  let url;
  try {
    url = new URL(`http://${s}/`);
  } catch {
    return null;
  }
  if (url.username || url.password || url.pathname !== '/') return null;
  return { name: url.hostname, port: url.port === '' ? 80 : Number(url.port) };
}

// Parses an --allow-host value: a name, optionally with a port. Without a
// port the name is accepted on any port (a reverse proxy passes its own).
export function parseAllowHost(text) {
  const hasPort = /^(\[[^\]]*\]|[^:[\]]*):\d+$/.test(text);
  const a = parseAuthority(text);
  if (!a) throw new Error(`--allow-host: "${text}" is not a host name or address (want NAME or NAME:PORT)`);
  return { name: a.name, port: hasPort ? a.port : null };
}

// Parses an --allow-origin value into the origin a browser would send:
// scheme, host and port, nothing else.
export function parseAllowOrigin(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--allow-origin: "${text}" is not an origin (want e.g. https://viewer.example.com)`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !isBareOrigin(text, url)) {
    throw new Error(`--allow-origin: "${text}" is not an origin (want SCHEME://HOST[:PORT], no path)`);
  }
  return url.origin;
}

// Whether text (parsed as url) is scheme://host[:port] and nothing more.
function isBareOrigin(text, url) {
  return !url.username && !url.password && !url.search && !url.hash && url.pathname === '/'
    && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(text);
}

export class AccessPolicy {
  // listenHost: the --host given; address, port: what the server is bound to.
  constructor({ listenHost, address, port, allowHosts = [], allowOrigins = [] }) {
    this.port = port;
    this.wildcard = isWildcard(address);
    this.loopback = this.wildcard || isLoopback(address);
    this.own = new Set();
    for (const n of [listenHost, address]) {
      const c = canonicalName(n);
      if (c && !isWildcard(n)) this.own.add(c);
    }
    if (this.loopback) for (const n of LOOPBACK_ALIASES) this.own.add(n);
    this.allowHosts = allowHosts.map((h) => (typeof h === 'string' ? parseAllowHost(h) : h));
    this.allowOrigins = new Set(allowOrigins.map((o) => parseAllowOrigin(o)));
  }

  // The machine's own addresses (for a relay bound to all of them), read
  // anew on each use: interfaces come and go.
  static #interfaceNames() {
    const names = new Set();
    for (const list of Object.values(os.networkInterfaces())) {
      for (const i of list ?? []) {
        const c = canonicalName(i.address.replace(/%.*$/, '')); // no zone ids in a Host header
        if (c) names.add(c);
      }
    }
    return names;
  }

  // Whether a Host header names this relay.
  hostAllowed(hostHeader) {
    const a = parseAuthority(hostHeader);
    if (!a) return false;
    if (this.allowHosts.some((h) => h.name === a.name && (h.port === null || h.port === a.port))) return true;
    if (a.port !== this.port) return false;
    if (this.own.has(a.name)) return true;
    return this.wildcard && AccessPolicy.#interfaceNames().has(a.name);
  }

  // Whether a WebSocket upgrade's Origin header is the relay's own page
  // (or an origin allowed by --allow-origin).
  originAllowed(origin) {
    if (typeof origin !== 'string' || origin === '' || origin === 'null') return false;
    let url;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (!isBareOrigin(origin, url)) return false; // a path, credentials: no browser sends that
    if (this.allowOrigins.has(url.origin)) return true;
    return url.protocol === 'http:' && this.hostAllowed(url.host);
  }
}

// Maps a request target (req.url: path and query) to a file under one of
// `mounts` ([{prefix: '/vendor/three/build/', dir}, …, {prefix: '/', dir,
// index: 'index.html'}], longest prefix first; dir null: nothing there), as
// {file, dir}, or null for a 404.
export function staticFile(target, mounts) {
  const raw = String(target).replace(/[?#].*$/s, '');
  if (!raw.startsWith('/')) return null;
  // Encoded slashes, backslashes and NULs never name a file here, nor does a
  // raw backslash (some systems read it as a separator).
  if (/%(2f|5c|00)/i.test(raw) || /[\\\0]/.test(raw)) return null;
  const segments = [];
  for (const seg of raw.slice(1).split('/')) {
    let s;
    try {
      s = decodeURIComponent(seg);
    } catch {
      return null;
    }
    if (s === '.' || s === '..' || /[\\/\0]/.test(s)) return null;
    segments.push(s);
  }
  const decoded = '/' + segments.join('/');
  for (const m of mounts) {
    if (!decoded.startsWith(m.prefix)) continue;
    if (!m.dir) return null; // a prefix that serves nothing
    let rel = decoded.slice(m.prefix.length);
    if (rel === '' && m.index) rel = m.index;
    if (rel === '' || rel.endsWith('/')) return null;
    const full = path.join(m.dir, ...rel.split('/'));
    return full.startsWith(m.dir + path.sep) ? { file: full, dir: m.dir } : null;
  }
  return null;
}

// Resolves symbolic links and checks that the file still lies under its
// folder and is a regular file; calls back with (stat, realPath) or null.
export function openStatic(found, cb) {
  fs.realpath(found.file, (err, real) => {
    if (err) return cb(null);
    fs.realpath(found.dir, (err2, realDir) => {
      if (err2 || !real.startsWith(realDir + path.sep)) return cb(null);
      fs.stat(real, (err3, st) => cb(err3 || !st.isFile() ? null : { stat: st, file: real }));
    });
  });
}
