'use strict';
// Error classes shared by the client and the frame decoder.

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
    this.name = new.target.name; // 'NotFound' for a NotFound
    this.code = code;
    this.reply = reply;
  }
}

// One subclass per stable code (PROTOCOL.md, Errors; solver/errors.h), named
// as the Python client names them: a caller catches the one it handles
// (`err instanceof NotFound`) and still catches ClothdError for any.

/** parse_error: the line was not a JSON object (or broke strict input). */
class ParseError extends ClothdError {}
/** unknown_command: `cmd` names no command of this server. */
class UnknownCommand extends ClothdError {}
/**
 * invalid_argument: a field is missing, of the wrong type, out of range,
 * not one of its names; on a strict connection, an unknown member.
 */
class InvalidArgument extends ClothdError {}
/** not_found: no such instance or collider, or not in the request's scene. */
class NotFound extends ClothdError {}
/** limit_exceeded: a configured limit (particles, instances, step work, colliders, list entries, connections). */
class LimitExceeded extends ClothdError {}
/** line_too_long: a request over --max-line; the server closes the connection. */
class LineTooLong extends ClothdError {}
/** internal: out of memory, or a file the server could not write; the request had no effect. */
class InternalError extends ClothdError {}
/**
 * unauthorized: a wrong or missing token ("token: wrong token"), a command
 * before `auth`, or one beyond the read-only token.
 */
class Unauthorized extends ClothdError {}

/** The wire's codes -> their class, in PROTOCOL.md's order (the one list). */
const ERROR_CLASSES = Object.freeze({
  parse_error: ParseError,
  unknown_command: UnknownCommand,
  invalid_argument: InvalidArgument,
  not_found: NotFound,
  limit_exceeded: LimitExceeded,
  line_too_long: LineTooLong,
  internal: InternalError,
  unauthorized: Unauthorized,
});
// Each class knows its code too: NotFound.code === 'not_found'.
for (const [code, cls] of Object.entries(ERROR_CLASSES)) cls.code = code;

/** The server's stable error codes (PROTOCOL.md, Errors). */
const ERROR_CODES = Object.freeze(Object.keys(ERROR_CLASSES));

/**
 * The error for an error reply: its code's class, or ClothdError itself for
 * a code this client does not know (a newer server's).
 */
function errorFromReply(code, message, reply) {
  const Cls = Object.hasOwn(ERROR_CLASSES, code) ? ERROR_CLASSES[code] : ClothdError;
  return new Cls(code, message, reply);
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
 * A server that lacks what the client needs; `endpoint` names it
 * ("10.0.0.7:7878"). Code "incompatible_server", which the server never
 * sends: the client raises it before sending anything. Raised as its
 * subclass FeatureMissing.
 */
class IncompatibleServer extends ClothdError {
  constructor(endpoint, message) {
    super('incompatible_server', `clothd endpoint ${endpoint}: ${message}`, undefined);
    this.endpoint = endpoint;
  }
}

/**
 * The server's hello does not list a feature the client needs (PROTOCOL.md
 * "hello"), as the Python client's FeatureMissing: one required at connect
 * (`new Client({require: ['scenes']})`, a ShardedClient's "scenes"), or one
 * a call needs (createSoftbody against a server whose hello lists no
 * "softbody"; any against a server without `hello`: no features known).
 * Nothing was sent for the call. `features` names the missing ones,
 * `neededBy` what needed them ('required by this client', 'needed by
 * "create"').
 */
class FeatureMissing extends IncompatibleServer {
  constructor(endpoint, message, features, neededBy) {
    super(endpoint, message);
    this.features = features;
    this.neededBy = neededBy;
  }
}

/**
 * subscribe({shm: true}) was granted, but this process cannot open the
 * ring the reply names: it is not on clothd's host, runs as another user,
 * or does not see clothd's /dev/shm (the systemd unit's private /dev).
 * `path` is the object's path, `cause` the fs error. The server has
 * subscribed: until a subscribe without shm replaces the subscription, its
 * frames are not delivered (counted in stats.missedFrames). Code
 * "shm_unavailable", which the server never sends.
 */
class ShmUnavailable extends ClothdError {
  constructor(endpoint, path, cause) {
    super('shm_unavailable', `${cause.message} (clothd at ${endpoint})`, undefined);
    this.endpoint = endpoint;
    this.path = path;
    this.cause = cause;
  }
}

module.exports = {
  ERROR_CODES,
  ERROR_CLASSES,
  errorFromReply,
  ClothdError,
  ParseError,
  UnknownCommand,
  InvalidArgument,
  NotFound,
  LimitExceeded,
  LineTooLong,
  InternalError,
  Unauthorized,
  ProtocolError,
  ConnectionClosed,
  ClothdWarning,
  EndpointUnavailable,
  IncompatibleServer,
  FeatureMissing,
  ShmUnavailable,
};
