'use strict';
// Error classes shared by the client and the frame decoder.

/** The server's stable error codes (PROTOCOL.md, Errors). */
const ERROR_CODES = Object.freeze([
  'parse_error',
  'unknown_command',
  'invalid_argument',
  'not_found',
  'limit_exceeded',
  'line_too_long',
  'internal',
  'unauthorized',
]);

/**
 * An error reply from the server ({"ok":false,"error":{code,message}}).
 * `code` is one of ERROR_CODES, `message` is the server's text unchanged
 * (it starts with the field at fault: "width: must be an integer >= 2"),
 * `reply` the whole decoded reply. A refused token, a command before
 * `auth` or one beyond the read-only token has code "unauthorized".
 */
class ClothdError extends Error {
  constructor(code, message, reply) {
    super(message);
    this.name = 'ClothdError';
    this.code = code;
    this.reply = reply;
  }
}

/**
 * The byte stream broke the wire contract (checked on the client side):
 * a bad frame, a reply that is not JSON, a reply id that does not match.
 * Its code is "protocol_error", which the server never sends.
 */
class ProtocolError extends ClothdError {
  constructor(message) {
    super('protocol_error', message, undefined);
    this.name = 'ProtocolError';
  }
}

/**
 * The connection is closed (by close(), by the server, or by a network
 * error, which is then the `cause`): every pending request is rejected with
 * one of these, and so is every request made afterwards.
 */
class ConnectionClosed extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'ConnectionClosed';
    this.code = 'connection_closed';
  }
}

/**
 * A reply's warning: a member the server did not read (PROTOCOL.md,
 * "Unknown members"), e.g. 'unknown member "widht" (did you mean
 * "width"?)'. Emitted as the client's 'warning' event, one per warning
 * (through process.emitWarning when nobody listens). `cmd` is the request's
 * command, `reply` the whole reply.
 */
class ClothdWarning extends Error {
  constructor(message, cmd, reply) {
    super(message);
    this.name = 'ClothdWarning';
    this.code = 'unknown_member';
    this.cmd = cmd;
    this.reply = reply;
  }
}

/**
 * The server that serves a scene cannot be reached (refused, reset, timed
 * out, closed): `endpoint` names it ("10.0.0.7:7878"), `scene` the scene
 * asked for (undefined when none), `cause` the socket error. A
 * ShardedClient never sends the scene elsewhere instead (a copy started on
 * another server would split the scene); the next call tries again.
 */
class EndpointUnavailable extends Error {
  constructor(endpoint, scene, cause) {
    const where = scene === undefined ? '' : ` (scene ${JSON.stringify(scene)} lives there)`;
    super(`clothd endpoint ${endpoint} is unavailable${where}: ${cause?.message ?? cause}; `
      + 'its scenes are not moved to another endpoint', { cause });
    this.name = 'EndpointUnavailable';
    this.code = 'endpoint_unavailable';
    this.endpoint = endpoint;
    this.scene = scene;
  }
}

/**
 * A server that lacks what the client needs: a ShardedClient asks each
 * endpoint's `hello` when it connects and refuses one whose `commands` do
 * not include "scene" (a clothd from before scenes would take "scene" as an
 * unknown member, warn, and mix every scene's instances). Code
 * "incompatible_server", which the server never sends; `endpoint` names it.
 */
class IncompatibleServer extends ClothdError {
  constructor(endpoint, message) {
    super('incompatible_server', `clothd endpoint ${endpoint}: ${message}`, undefined);
    this.name = 'IncompatibleServer';
    this.endpoint = endpoint;
  }
}

module.exports = {
  ERROR_CODES, ClothdError, ProtocolError, ConnectionClosed, ClothdWarning, EndpointUnavailable, IncompatibleServer,
};
