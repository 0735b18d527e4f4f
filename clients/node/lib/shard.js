'use strict';
// Scenes, and scenes spread over several clothd servers (PROTOCOL.md,
// "Scenes" and "Sharding").
//
// A Scene wraps a Client and sends its name as "scene" with every request
// that takes one, so the server holds each request to the scene's
// instances, and step/status/destroy/subscribe without instances act on
// the whole scene. A ShardedClient places each scene on one endpoint of a
// fixed list by rendezvous hashing (lib/placement.js): every process given
// the same list agrees, with no coordinator. One connection per endpoint,
// opened on first use and shared by that endpoint's scenes. A scene never
// spans two servers, so a down endpoint is an error naming it
// (EndpointUnavailable), never a silent move elsewhere.

const { ClothdError, ConnectionClosed, EndpointUnavailable } = require('./errors.js');
const { placeScene, checkSceneName, parseEndpoint } = require('./placement.js');

const DEFAULT_CONNECT_TIMEOUT_MS = 10000;

/**
 * The Client methods a Scene offers, each run in the scene (every Client
 * method whose command takes "scene"; destroy, scene and scenes are the
 * Scene's own, below).
 */
const SCENE_METHODS = Object.freeze([
  'request', 'create', 'createCloth', 'createSoftbody', 'createMeshCloth', 'skin', 'pinBulk', 'teleport',
  'topology', 'set', 'transform', 'attach', 'pin', 'unpin', 'wind', 'gravity', 'addCollider',
  'addTaperedCapsule', 'moveCollider', 'removeCollider', 'enable', 'step', 'get', 'subscribe', 'unsubscribe',
  'status', 'save', 'record',
]);

// The connection failed (as opposed to the server answering an error).
function isConnectionError(err) {
  return err instanceof ConnectionClosed || (err instanceof Error && typeof err.syscall === 'string');
}

class Scene {
  /**
   * `new Scene(client, "npc-capes")` on one server; ShardedClient.scene()
   * gives one bound to the scene's server (options.endpoint, options.shards).
   */
  constructor(client, name, options = {}) {
    this.name = checkSceneName(name);
    this._fixed = client ?? null;
    this._shards = options.shards ?? null;
    if (this._fixed === null && this._shards === null)
      throw new TypeError('Scene: needs a client (or a ShardedClient)');
    /** "host:port" (or "unix:PATH") of the server the scene lives on. */
    this.endpoint = options.endpoint ?? client.endpoint;
  }

  /** Resolves with the connection this scene's requests go through. */
  client() {
    return this._fixed !== null ? Promise.resolve(this._fixed) : this._shards.client(this.endpoint, this.name);
  }

  async _call(method, args) {
    const client = await this.client();
    // Each Client method builds its request line synchronously, before its
    // first await: the scene is stamped on exactly this call's request.
    const previous = client._scene;
    client._scene = this.name;
    let pending;
    try {
      pending = client[method](...args);
    } finally {
      client._scene = previous;
    }
    try {
      return await pending;
    } catch (err) {
      if (this._shards === null || !isConnectionError(err)) throw err;
      this._shards._forget(this.endpoint, client);
      throw new EndpointUnavailable(this.endpoint, this.name, err);
    }
  }

  /** Destroys one instance of the scene, or without an id the whole scene. */
  async destroy(instance) {
    if (instance === undefined) await this._call('request', ['destroy', {}]);
    else await this._call('destroy', [instance]);
  }

  /**
   * Ties the scene to this connection (opts.ephemeral true), lets go of it
   * (false) or only asks: the `scene` reply ({scene, instances, ephemeral,
   * owned}).
   */
  scene(opts = {}) {
    return this._call('scene', [this.name, opts]);
  }

  /** The scene's entry of `scenes`: [{scene, instances, ephemeral}], [] when it has none. */
  scenes() {
    return this._call('scenes', [{ scene: this.name }]);
  }

  /** The ids of the scene's instances (from status). */
  async instances() {
    const reply = await this.status();
    return (reply.instances ?? []).map((s) => s.instance);
  }
}

for (const method of SCENE_METHODS) {
  Object.defineProperty(Scene.prototype, method, {
    value: function sceneMethod(...args) {
      return this._call(method, args);
    },
    writable: true,
    configurable: true,
  });
}

class ShardedClient {
  /**
   * endpoints: "host:port" strings, or "unix:PATH" for a server on this
   * host listening on a Unix socket (clothd --unix PATH), spelt the same
   * way by every process (the hash reads the text). options: any Client option (token,
   * maxMessageBytes, ...) for every connection, and connectTimeoutMs
   * (10000): how long a connection may take before the endpoint counts as
   * unavailable.
   */
  constructor(endpoints, options = {}) {
    if (typeof endpoints === 'string' || !endpoints || typeof endpoints[Symbol.iterator] !== 'function')
      throw new TypeError('ShardedClient: endpoints is a list of "host:port" (or "unix:PATH") strings');
    const list = [...endpoints];
    if (list.length === 0) throw new RangeError('ShardedClient: no endpoints');
    const seen = new Set();
    for (const endpoint of list) {
      parseEndpoint(endpoint);
      if (seen.has(endpoint)) throw new RangeError(`ShardedClient: endpoint ${endpoint} is listed twice`);
      seen.add(endpoint);
    }
    /** The endpoint list, fixed for the client's life. */
    this.endpoints = Object.freeze(list);
    const { connectTimeoutMs, ...clientOptions } = options;
    this._connectTimeoutMs = connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this._clientOptions = clientOptions;
    this._links = new Map(); // endpoint -> {client, ready}
  }

  /** The endpoint that serves `scene` (no connection is made). */
  endpoint(scene) {
    return placeScene(this.endpoints, checkSceneName(scene));
  }

  /** A Scene bound to its server's connection (opened on first use). */
  scene(name) {
    return new Scene(null, name, { endpoint: this.endpoint(name), shards: this });
  }

  /**
   * Resolves with the connection to `endpoint` (one of this.endpoints),
   * connecting first when there is none (its hello must list the "scenes"
   * feature, and any the options require, else FeatureMissing); rejects
   * with EndpointUnavailable (naming `scene` when given) when it cannot be
   * reached.
   */
  async client(endpoint, scene) {
    if (!this.endpoints.includes(endpoint))
      throw new RangeError(`endpoint ${endpoint} is not one of ${JSON.stringify(this.endpoints)}`);
    let link = this._links.get(endpoint);
    if (link === undefined || link.client.state === 'closed') {
      link = this._open(endpoint);
      this._links.set(endpoint, link);
    }
    try {
      return await link.ready;
    } catch (err) {
      if (err instanceof ClothdError) throw err; // the server answered (a refused token)
      throw new EndpointUnavailable(endpoint, scene, err);
    }
  }

  _open(endpoint) {
    const { Client } = require('../index.js'); // here: index.js requires this file
    // {host, port} or {path}: the endpoint decides, whatever the options say.
    const { host: _h, port: _p, path: _u, ...options } = this._clientOptions;
    const address = parseEndpoint(endpoint);
    // A clothd without scenes would only warn about "scene" and mix every
    // scene's instances: the connection requires the feature, so such a
    // server is refused by name (FeatureMissing) at connect.
    const required = [...new Set([...(this._clientOptions.require ?? []), 'scenes'])];
    const client = new Client({ ...options, require: required, hello: true, ...address });
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection within ${this._connectTimeoutMs} ms`)),
        this._connectTimeoutMs);
    });
    const ready = Promise.race([client.connect(), timeout]).finally(() => clearTimeout(timer))
      .then(() => client)
      .catch((err) => {
        this._forget(endpoint, client);
        throw err;
      });
    ready.catch(() => {}); // reported to each caller by client()
    return { client, ready };
  }

  /**
   * Every scene of every endpoint, sorted by name: [{scene, instances,
   * ephemeral, endpoint}] (`scenes` sent to each server, merged; a scene
   * lives on one server, so each appears once). Connects to every endpoint;
   * one that cannot be reached rejects with EndpointUnavailable naming it
   * (a partial list would read as scenes that are gone).
   */
  async scenes() {
    const lists = await Promise.all(this.endpoints.map(async (endpoint) => {
      const client = await this.client(endpoint);
      try {
        return (await client.scenes()).map((entry) => ({ ...entry, endpoint }));
      } catch (err) {
        if (!isConnectionError(err)) throw err;
        this._forget(endpoint, client);
        throw new EndpointUnavailable(endpoint, undefined, err);
      }
    }));
    return lists.flat().sort((a, b) => (a.scene < b.scene ? -1 : a.scene > b.scene ? 1 : 0));
  }

  /** The endpoints with an open connection. */
  get connected() {
    return [...this._links].filter(([, l]) => l.client.state === 'open').map(([e]) => e);
  }

  _forget(endpoint, client) {
    if (this._links.get(endpoint)?.client === client) this._links.delete(endpoint);
    client.close().catch(() => {});
  }

  /** Closes every connection; resolves once they are closed. */
  async close() {
    const links = [...this._links.values()];
    this._links.clear();
    await Promise.all(links.map((l) => l.client.close()));
  }
}

module.exports = { Scene, ShardedClient, SCENE_METHODS };
