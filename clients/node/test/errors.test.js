'use strict';
// One error class per wire code (PROTOCOL.md "Errors"), each a ClothdError:
// the real server's replies reject with their code's class, code and
// message; a code this client does not know stays a plain ClothdError.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const api = require('..');
const {
  Client, ClothdError, ParseError, UnknownCommand, InvalidArgument, NotFound, LimitExceeded, LineTooLong,
  InternalError, Unauthorized, ProtocolError, IncompatibleServer, FeatureMissing, ERROR_CLASSES, ERROR_CODES,
} = api;
const { errorFromReply } = require('../lib/errors.js');
const { startServer } = require('../test-support/server.js');

let server;
let client;

before(async () => {
  server = await startServer(['--workers', '1', '--max-particles', '100', '--max-line', '4096']);
  client = await Client.connect(server.address);
});

after(async () => {
  if (client) await client.close();
  if (server) await server.stop().catch(() => {});
});

/** A rejection check: `Cls`, a ClothdError, with `code` and exactly `message`. */
function is(Cls, code, message) {
  return (err) => {
    assert.ok(err instanceof Cls, `${err.name} is not ${Cls.name}: ${err.stack}`);
    assert.ok(err instanceof ClothdError && err instanceof Error);
    assert.equal(err.name, Cls.name);
    assert.equal(err.code, code);
    assert.equal(err.message, message);
    assert.deepEqual(err.reply.error, { code, message });
    return true;
  };
}

test('each wire code has its class, named as in the Python client', () => {
  assert.deepEqual(Object.keys(ERROR_CLASSES), [...ERROR_CODES]);
  const names = Object.values(ERROR_CLASSES).map((c) => c.name);
  assert.deepEqual(names, ['ParseError', 'UnknownCommand', 'InvalidArgument', 'NotFound', 'LimitExceeded',
    'LineTooLong', 'InternalError', 'Unauthorized']);
  for (const [code, Cls] of Object.entries(ERROR_CLASSES)) {
    assert.equal(Cls.code, code);
    assert.equal(api[Cls.name], Cls, `${Cls.name} is exported`);
    assert.ok(Cls.prototype instanceof ClothdError);
    const e = errorFromReply(code, 'm', { ok: false });
    assert.ok(e instanceof Cls);
    assert.equal(String(e), `${Cls.name}: m`);
  }
  const newer = errorFromReply('overloaded', 'a newer server says so', { ok: false });
  assert.equal(newer.constructor, ClothdError, 'a code this client does not know');
  assert.equal(newer.code, 'overloaded');
  assert.ok(new ProtocolError('x') instanceof ClothdError && !(new ProtocolError('x') instanceof NotFound));
  assert.ok(new IncompatibleServer('h:1', 'x') instanceof ClothdError);
  const missing = new FeatureMissing('h:1', 'x', ['scenes'], 'required by this client');
  assert.ok(missing instanceof IncompatibleServer && missing.name === 'FeatureMissing' && missing.code === 'incompatible_server');
});

test('the real server\'s not_found and invalid_argument reject with NotFound and InvalidArgument', async () => {
  await assert.rejects(client.get(987654), is(NotFound, 'not_found', 'instance: no instance 987654'));
  await assert.rejects(client.createCloth({ width: 1 }), is(InvalidArgument, 'invalid_argument',
    'width: must be an integer >= 2'));
  const id = await client.createCloth({ width: 3, height: 3, scene: 'errors-a' });
  await assert.rejects(client.request('get', { instance: id, scene: 'errors-b' }), is(NotFound, 'not_found',
    `instance: instance ${id} is not in scene "errors-b"`));
  await client.destroy(id);
});

test('unknown_command, parse_error, limit_exceeded, line_too_long: their classes', async () => {
  await assert.rejects(client.request('creat'), is(UnknownCommand, 'unknown_command',
    'unknown command "creat" (did you mean "create"?)'));
  await assert.rejects(client.createCloth({ width: 20, height: 20 }), is(LimitExceeded, 'limit_exceeded',
    'width, height: 400 particles exceed the limit of 100'));
  const raw = await client.rawRequest('[1,2]'); // rawRequest resolves any reply
  assert.equal(raw.error.code, 'parse_error');
  assert.ok(errorFromReply(raw.error.code, raw.error.message, raw) instanceof ParseError);
  const doomed = await Client.connect(server.address);
  await assert.rejects(doomed.request('ping', { pad: 'x'.repeat(5000) }), (err) =>
    err instanceof LineTooLong && err.code === 'line_too_long' && /longer than the limit of 4096 bytes/.test(err.message));
  await doomed.close();
  assert.equal(typeof InternalError, 'function');
  assert.equal(typeof Unauthorized, 'function'); // exercised against a token server in auth.test.js
});
