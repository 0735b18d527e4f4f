'use strict';
// What a request needs of the server beyond protocol 1's first commands
// (PROTOCOL.md "hello": the `features` a server lists). The client checks a
// request against the features the server's hello listed before sending it,
// so a call against a server that lacks one fails at once, naming the
// feature and the server, instead of being half-understood (an old server
// would take "scene" as an unknown member and mix every scene's instances).

/** The features a clothd may list in its hello (PROTOCOL.md "hello"). */
const FEATURES = Object.freeze([
  'warnings', 'strict', 'scenes', 'ephemeral', 'softbody', 'mesh', 'skin', 'budget', 'snapshots', 'recording', 'shm',
]);

// The painted per-vertex properties (PROTOCOL.md "Painted properties"): in
// create and set a number (every vertex), an array (one per vertex) or
// null (unpainted again); topology hands the painted ones back.
const PAINTED = Object.freeze([
  'invMassScale', 'maxDistance', 'backstopDistance', 'backstopRadius', 'stretchComplianceScale',
  'bendComplianceScale',
]);

/** The features a clothd lists only when started with --data-dir. */
const DATA_DIR_FEATURES = ['snapshots', 'recording'];

const has = (msg, key) => msg[key] !== undefined;

/**
 * The features the request message `msg` of `cmd` needs (an array, empty
 * for a plain protocol 1 request).
 */
function featuresNeeded(cmd, msg) {
  const needs = [];
  const need = (feature) => {
    if (!needs.includes(feature)) needs.push(feature);
  };
  if (cmd === 'scene' || cmd === 'scenes' || has(msg, 'scene')) need('scenes');
  if (msg.ephemeral === true) need('ephemeral');
  if (cmd === 'create' && msg.type === 'softbody') need('softbody');
  if (cmd === 'create' && msg.type !== 'softbody' && (has(msg, 'vertices') || has(msg, 'triangles'))) need('mesh');
  if ((cmd === 'create' || cmd === 'set') && PAINTED.some((k) => has(msg, k))) need('mesh');
  if (cmd === 'skin') need('skin');
  if ((cmd === 'step' && has(msg, 'budgetMs')) || ((cmd === 'create' || cmd === 'set') && (has(msg, 'lod') || has(msg, 'priority'))))
    need('budget');
  if ((cmd === 'save' || cmd === 'load') && msg.memory !== true) need('snapshots');
  if (cmd === 'record' || cmd === 'replay' || cmd === 'journals') need('recording');
  if (cmd === 'hello' && msg.strict === true) need('strict');
  if (cmd === 'subscribe' && msg.shm === true) need('shm');
  return needs;
}

/** A feature list for a message: '"scenes", "softbody"'. */
function quoteList(features) {
  return features.map((f) => JSON.stringify(f)).join(', ');
}

/**
 * Why the server lacks `missing`, for a FeatureMissing message: 'the
 * server lacks the feature "softbody" needed by "create" (its hello lists:
 * warnings, strict)'. `features`: what its hello listed, null when it has
 * no hello; `what`: whose need it is ('needed by "create"').
 */
function lackMessage(missing, features, what) {
  const noun = missing.length === 1 ? 'feature' : 'features';
  const hint = missing.some((f) => DATA_DIR_FEATURES.includes(f))
    ? '; clothd lists snapshots and recording only when started with --data-dir' : '';
  const why = features === null
    ? 'it does not answer hello, like a clothd from before the handshake: no features known'
    : `its hello lists: ${features.length ? features.join(', ') : 'none'}`;
  return `the server lacks the ${noun} ${quoteList(missing)}${what ? ` ${what}` : ''} (${why}${hint})`;
}

module.exports = { FEATURES, PAINTED, featuresNeeded, lackMessage };
