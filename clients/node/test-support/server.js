'use strict';
// Starts the real clothd for the tests: `--port 0`, the port read from the
// banner `clothd 0.1.0 listening on 127.0.0.1:PORT (N workers)`. With
// { unix: true } also `--unix PATH` (clothd.sock in a fresh temporary
// folder, removed when the process exits; { unix: PATH } uses that path),
// and the second line `clothd listening on unix:PATH` is waited for.
// The binary: $CLOTHD_BIN, else build/clothd at the repository root.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const CLOTHD_BIN = process.env.CLOTHD_BIN
  ? path.resolve(REPO_ROOT, process.env.CLOTHD_BIN)
  : path.join(REPO_ROOT, 'build', 'clothd');
const BANNER = /^clothd (\S+) listening on (\S+):(\d+) \((\d+) workers?\)$/;
const UNIX_BANNER = /^clothd listening on unix:(.+)$/;

class Server {
  constructor(proc, banner, unixPath = null) {
    this.proc = proc;
    /** The Unix socket's path (null without --unix). */
    this.path = unixPath;
    this.version = banner[1];
    this.host = banner[2];
    this.port = Number(banner[3]);
    this.workers = Number(banner[4]);
    this.stderr = '';
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => resolve({ code, signal }));
    });
    if (proc.exitCode !== null || proc.signalCode !== null)
      this.exited = Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  }

  /** The options Client.connect needs. */
  get address() {
    return { host: this.host, port: this.port };
  }

  /** The options Client.connect needs for the Unix socket. */
  get unixAddress() {
    return { path: this.path };
  }

  /**
   * Sends `signal` (SIGTERM) and resolves with {code, signal} once the
   * process exits; SIGKILL and a rejection after `timeoutMs`.
   */
  async stop(signal = 'SIGTERM', timeoutMs = 5000) {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        reject(new Error(`clothd did not exit within ${timeoutMs} ms of ${signal}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Starts clothd with extra `args` (and options.unix); resolves with a Server. */
function startServer(args = [], timeoutMs = 10000, options = {}) {
  let unixPath = null;
  let unixDir = null;
  if (options.unix === true) {
    unixDir = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-'));
    unixPath = path.join(unixDir, 'clothd.sock');
  } else if (typeof options.unix === 'string') {
    unixPath = options.unix;
  }
  const unixArgs = unixPath === null ? [] : ['--unix', unixPath];
  return new Promise((resolve, reject) => {
    const proc = spawn(CLOTHD_BIN, ['--port', '0', ...args, ...unixArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (unixDir !== null) proc.once('exit', () => fs.rmSync(unixDir, { recursive: true, force: true }));
    let out = '';
    let err = '';
    let server = null;
    const fail = (e) => {
      clearTimeout(timer);
      if (!server) reject(e);
    };
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      fail(new Error(`${CLOTHD_BIN}: no banner within ${timeoutMs} ms (stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)})`));
    }, timeoutMs);
    proc.on('error', (e) => fail(new Error(`${CLOTHD_BIN}: ${e.message} (build it with \`make build/clothd\` or set CLOTHD_BIN)`)));
    proc.stderr.on('data', (d) => {
      err += d;
      if (server) server.stderr += d;
    });
    proc.on('exit', (code, signal) => fail(new Error(`${CLOTHD_BIN} exited (${code ?? signal}) before its banner: ${err}`)));
    proc.stdout.on('data', (d) => {
      if (server) return; // keep draining
      out += d;
      const lines = out.split('\n');
      if (lines.length < (unixPath === null ? 2 : 3)) return; // the banner (and the unix line) not complete yet
      const m = BANNER.exec(lines[0]);
      const u = unixPath === null ? null : UNIX_BANNER.exec(lines[1]);
      if (!m || (unixPath !== null && (!u || u[1] !== unixPath))) {
        proc.kill('SIGKILL');
        fail(new Error(`${CLOTHD_BIN}: unexpected banner ${JSON.stringify(lines.slice(0, 2).join('\n'))}` +
          (unixPath === null ? '' : ` (wanted "clothd listening on unix:${unixPath}" second)`)));
        return;
      }
      clearTimeout(timer);
      server = new Server(proc, m, unixPath);
      server.stderr = err;
      resolve(server);
    });
  });
}

module.exports = { startServer, Server, CLOTHD_BIN, REPO_ROOT };
