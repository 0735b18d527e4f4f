'use strict';
// The READMEs' Node snippets run as they are written (only the package path
// and the port changed) against their own server, twice each, and leave it
// with no instance and no scene: README.md's "Drive it from Node" and
// clients/node/README.md's Example.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');

const { Client } = require('..');
const { startServer, REPO_ROOT } = require('../test-support/server.js');

const PACKAGE = path.join(__dirname, '..');

let server;
let client;
let tmp;

before(async () => {
  server = await startServer(['--workers', '1']);
  client = await Client.connect(server.address);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clothd-node-readme-'));
});

after(async () => {
  if (client) await client.close();
  if (server) await server.stop().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** The first ```js block after `heading` in the repository file `file`. */
function snippet(file, heading) {
  const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const at = text.indexOf(heading);
  assert.ok(at >= 0, `${file}: no "${heading}"`);
  const m = /```js\n([\s\S]*?)```/.exec(text.slice(at));
  assert.ok(m, `${file}: no js block after "${heading}"`);
  return m[1];
}

/** `code` with `from` replaced by `to` (which must be there). */
function swap(code, from, to) {
  assert.ok(code.includes(from), `the snippet no longer has ${from}`);
  return code.replace(from, to);
}

function run(file) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file], { timeout: 30000 }, (err, stdout, stderr) =>
      (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
}

/** Waits until the server holds no instance and no scene (ephemeral ones go as their connection closes). */
async function nothingLeft(what) {
  const deadline = Date.now() + 5000;
  let left;
  do {
    left = { instances: (await client.status()).instances, scenes: await client.scenes() };
    if (left.instances.length === 0 && left.scenes.length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  } while (Date.now() < deadline);
  assert.fail(`${what} left ${JSON.stringify(left)}`);
}

test("README.md's Node session, run twice, leaves nothing behind", async () => {
  let code = snippet('README.md', '## Drive it from Node');
  code = swap(code, "require('./clients/node')", `require(${JSON.stringify(PACKAGE)})`);
  code = swap(code, "port: 7878", `port: ${server.port}`);
  const file = path.join(tmp, 'top.js');
  fs.writeFileSync(file, code);
  for (let i = 0; i < 2; i++) {
    assert.match(await run(file), /\d+ 59 /, 'it printed frames up to frame 59 (60 follows the last reply)');
    await nothingLeft(`run ${i + 1}`);
  }
});

test("clients/node/README.md's Example, run twice, leaves nothing behind", async () => {
  let code = snippet('clients/node/README.md', '## Example');
  code = swap(code, "from 'clothd'", `from ${JSON.stringify(path.join(PACKAGE, 'index.js'))}`);
  code = swap(code, "port: 7878", `port: ${server.port}`);
  const file = path.join(tmp, 'example.mjs');
  fs.writeFileSync(file, code);
  for (let i = 0; i < 2; i++) {
    const out = await run(file);
    assert.match(out, /^60 (1|0\.99\d*|1\.0\d*) Float32Array/m, 'frame 60 at t = 1 s');
    assert.match(out, /not_found instance: no instance 12345/);
    await nothingLeft(`run ${i + 1}`);
  }
});
