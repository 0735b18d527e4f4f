'use strict';
// Starts the real clothd for the tests: `--port 0`, the port read from the
// banner `clothd 0.1.0 listening on 127.0.0.1:PORT (N workers)`.
// The binary: $CLOTHD_BIN, else build/clothd at the repository root.

const { spawn } = require('node:child_process');
const path = require('node:path');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const CLOTHD_BIN = process.env.CLOTHD_BIN
  ? path.resolve(REPO_ROOT, process.env.CLOTHD_BIN)
  : path.join(REPO_ROOT, 'build', 'clothd');
const BANNER = /^clothd (\S+) listening on (\S+):(\d+) \((\d+) workers?\)$/;

class Server {
  constructor(proc, banner) {
    this.proc = proc;
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

/** Starts clothd with extra `args`; resolves with a Server. */
function startServer(args = [], timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const proc = spawn(CLOTHD_BIN, ['--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
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
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const m = BANNER.exec(out.slice(0, nl));
      if (!m) {
        proc.kill('SIGKILL');
        fail(new Error(`${CLOTHD_BIN}: unexpected banner ${JSON.stringify(out.slice(0, nl))}`));
        return;
      }
      clearTimeout(timer);
      server = new Server(proc, m);
      server.stderr = err;
      resolve(server);
    });
  });
}

module.exports = { startServer, Server, CLOTHD_BIN, REPO_ROOT };
