'use strict';
// The package surface: what index.d.ts declares is what index.js exports,
// and package.json points at both.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const api = require('..');

test('index.d.ts declares exactly the runtime exports', () => {
  const dts = fs.readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8');
  const declared = new Set();
  for (const m of dts.matchAll(/^export (?:declare )?(?:class|function|const) (\w+)/gm)) declared.add(m[1]);
  assert.deepEqual([...declared].sort(), Object.keys(api).sort());
  // Every Client method the declarations name exists at runtime.
  const body = dts.slice(dts.indexOf('export class Client extends EventEmitter'));
  const methods = new Set([...body.matchAll(/^ {2}(?:static )?(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]));
  for (const name of methods) {
    if (name === 'constructor') continue;
    const where = name === 'connect' ? [api.Client, api.Client.prototype] : [api.Client.prototype];
    for (const w of where) assert.equal(typeof w[name], 'function', `Client ${name}`);
  }
  for (const cmd of ['createCloth', 'destroy', 'pin', 'unpin', 'wind', 'gravity', 'addCollider', 'moveCollider',
    'removeCollider', 'enable', 'step', 'get', 'subscribe', 'unsubscribe', 'status', 'debug', 'request']) {
    assert.ok(methods.has(cmd), `index.d.ts declares ${cmd}`);
  }
});

test('package.json: no dependencies, main and types point at the files', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(pkg.name, 'clothd');
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.devDependencies, undefined);
  assert.ok(fs.existsSync(path.join(ROOT, pkg.main)));
  assert.ok(fs.existsSync(path.join(ROOT, pkg.types)));
  assert.equal(api.VERSION, pkg.version);
});

test('ERROR_CODES is the C list in solver/errors.h', () => {
  const header = fs.readFileSync(path.join(ROOT, '..', '..', 'solver', 'errors.h'), 'utf8');
  const codes = [...header.matchAll(/X\(\s*\w+\s*,\s*"(\w+)"/g)].map((m) => m[1]);
  assert.ok(codes.length >= 7, 'found the X-macro list');
  assert.deepEqual([...api.ERROR_CODES], codes);
});
