// Type declarations for clothd, the Node.js client of the clothd cloth server.
// The wire contract is protocol/PROTOCOL.md.

/// <reference types="node" />

import { EventEmitter } from 'node:events';

/** [x, y, z]; any array-like of 3 numbers is accepted where sent. */
export type Vec3 = [number, number, number];
export type Vec3Like = ArrayLike<number>;

/** The server's stable error codes. */
export type ErrorCode =
  | 'parse_error'
  | 'unknown_command'
  | 'invalid_argument'
  | 'not_found'
  | 'limit_exceeded'
  | 'line_too_long'
  | 'internal'
  | 'unauthorized';

export const ERROR_CODES: readonly ErrorCode[];

/**
 * An error reply from the server; `message` is the server's text unchanged.
 * The error is its code's subclass (NotFound for "not_found", ...), or
 * ClothdError itself for a code this client does not know.
 * Code "unauthorized": a refused token ("token: wrong token"), a command
 * before `auth` ('cmd: "status" needs auth first') or beyond the read-only
 * token ('cmd: "wind" is not allowed with the read-only token').
 */
export class ClothdError extends Error {
  constructor(code: string, message: string, reply?: Reply);
  /** An ErrorCode, or "protocol_error" / "incompatible_server" for the client's own. */
  readonly code: ErrorCode | 'protocol_error' | 'incompatible_server' | string;
  /** The whole error reply (undefined for the client's own errors). */
  readonly reply: Reply | undefined;
}

/** parse_error: the line was not a JSON object (or broke strict input). */
export class ParseError extends ClothdError {
  static readonly code: 'parse_error';
  readonly code: 'parse_error';
}
/** unknown_command: `cmd` names no command of this server. */
export class UnknownCommand extends ClothdError {
  static readonly code: 'unknown_command';
  readonly code: 'unknown_command';
}
/** invalid_argument: a field missing, of the wrong type, out of range; on a strict connection, an unknown member. */
export class InvalidArgument extends ClothdError {
  static readonly code: 'invalid_argument';
  readonly code: 'invalid_argument';
}
/** not_found: no such instance or collider, or not in the request's scene. */
export class NotFound extends ClothdError {
  static readonly code: 'not_found';
  readonly code: 'not_found';
}
/** limit_exceeded: a configured limit (particles, instances, step work, colliders, list entries, connections). */
export class LimitExceeded extends ClothdError {
  static readonly code: 'limit_exceeded';
  readonly code: 'limit_exceeded';
}
/** line_too_long: a request over --max-line; the server closes the connection. */
export class LineTooLong extends ClothdError {
  static readonly code: 'line_too_long';
  readonly code: 'line_too_long';
}
/** internal: out of memory, or a file the server could not write; the request had no effect. */
export class InternalError extends ClothdError {
  static readonly code: 'internal';
  readonly code: 'internal';
}
/** unauthorized: a wrong or missing token, a command before `auth`, or one beyond the read-only token. */
export class Unauthorized extends ClothdError {
  static readonly code: 'unauthorized';
  readonly code: 'unauthorized';
}

/** Each wire code's class, in PROTOCOL.md's order. */
export const ERROR_CLASSES: {
  readonly parse_error: typeof ParseError;
  readonly unknown_command: typeof UnknownCommand;
  readonly invalid_argument: typeof InvalidArgument;
  readonly not_found: typeof NotFound;
  readonly limit_exceeded: typeof LimitExceeded;
  readonly line_too_long: typeof LineTooLong;
  readonly internal: typeof InternalError;
  readonly unauthorized: typeof Unauthorized;
};

/**
 * What a server's hello may list (PROTOCOL.md "hello"); snapshots and
 * recording only with --data-dir, shm unless --shm-mb 0.
 */
export type Feature =
  | 'warnings'
  | 'strict'
  | 'scenes'
  | 'ephemeral'
  | 'softbody'
  | 'mesh'
  | 'skin'
  | 'budget'
  | 'snapshots'
  | 'recording'
  | 'shm';

export const FEATURES: readonly Feature[];

/** The server's bounds from its hello (its command line). */
export interface ServerLimits {
  /** --max-line */
  lineBytes: number;
  /** Replies queued to one client. */
  outputBytes: number;
  /** Frame bytes in flight to one subscriber before frames are skipped. */
  frameBytes: number;
  connections: number;
  instances: number;
  particlesPerInstance: number;
  /** All live instances. */
  particles: number;
  /** Particles x substeps x iterations of one instance. */
  stepWork: number;
}

/** The byte stream broke the wire contract (detected by the client); code "protocol_error". */
export class ProtocolError extends ClothdError {
  constructor(message: string);
  readonly code: 'protocol_error';
}

/**
 * A reply's warning: a member the server did not read (PROTOCOL.md,
 * "Unknown members"), e.g. 'unknown member "widht" (did you mean "width"?)'.
 * Emitted as the client's 'warning' event (process.emitWarning without a listener).
 */
export class ClothdWarning extends Error {
  constructor(message: string, cmd: string | null, reply: Reply);
  readonly code: 'unknown_member';
  /** The command of the request whose reply carried it. */
  readonly cmd: string | null;
  readonly reply: Reply;
}

/** The connection is closed: pending and later requests reject with this. */
export class ConnectionClosed extends Error {
  constructor(message: string, options?: { cause?: unknown });
  readonly code: 'connection_closed';
}

/**
 * The server of a scene cannot be reached (refused, reset, timed out,
 * closed); nothing fails over to another endpoint, which would split the
 * scene. The next call tries the endpoint again.
 */
export class EndpointUnavailable extends Error {
  constructor(endpoint: string, scene: string | undefined, cause: unknown);
  readonly code: 'endpoint_unavailable';
  /** "host:port" (or "unix:PATH") of the unreachable server. */
  readonly endpoint: string;
  /** The scene asked for (undefined when none). */
  readonly scene: string | undefined;
}

/** A server that lacks what the client needs (raised as FeatureMissing); nothing was sent. */
export class IncompatibleServer extends ClothdError {
  constructor(endpoint: string, message: string);
  readonly code: 'incompatible_server';
  /** "host:port" (or "unix:PATH") of the server. */
  readonly endpoint: string;
}

/**
 * The server's hello does not list a feature the client needs: one required
 * at connect (ClientOptions.require, strict, a ShardedClient's "scenes"), or
 * one a call needs (createSoftbody against a server whose hello lists no
 * "softbody"; any against a server without hello). Nothing was sent for the call.
 */
export class FeatureMissing extends IncompatibleServer {
  constructor(endpoint: string, message: string, features: string[], neededBy: string);
  /** The features it lacks. */
  readonly features: string[];
  /** What needed them: 'required by this client', 'needed by "create"'. */
  readonly neededBy: string;
}

/**
 * subscribe({shm: true}) was granted, but this process cannot open the ring
 * the reply names (not on clothd's host, another user, or a private /dev).
 * The server has subscribed: until a subscribe without shm replaces it, its
 * frames are not delivered (counted in stats.missedFrames).
 */
export class ShmUnavailable extends ClothdError {
  constructor(endpoint: string, path: string, cause: Error);
  readonly code: 'shm_unavailable';
  readonly endpoint: string;
  /** "/dev/shm" + the ring's name. */
  readonly path: string;
  /** The fs error (code ENOENT, EACCES, ...). */
  readonly cause: Error;
}

/** The commands that accept "scene" (wind only with an instance; scene and scenes: the scene asked about). */
export const SCENE_COMMANDS: ReadonlySet<string>;
/**
 * The weight of `scene` on `endpoint` (an unsigned 64-bit BigInt):
 * fmix64(fnv1a64(utf8(endpoint) || 0x00 || utf8(scene))), PROTOCOL.md "Sharding".
 */
export function rendezvousWeight(endpoint: string, scene: string): bigint;
/** The endpoint that serves `scene`: the highest weight (a tie: the bytes that sort first). */
export function placeScene(endpoints: readonly string[], scene: string): string;
/** `name` when it is 1 to 64 of A-Z a-z 0-9 . _ : -; throws otherwise. */
export function checkSceneName(name: string): string;
/**
 * "host:port" ("[::1]:7878" for IPv6) as {host, port}, or "unix:PATH" as
 * {path}; throws naming the endpoint. "unix:" and digits only stays
 * host "unix" (write "unix:./7878" for a socket file of that name).
 */
export function parseEndpoint(endpoint: string): { host: string; port: number } | { path: string };
/** The longest Unix socket path accepted, in bytes (107 on Linux, 103 on macOS and the BSDs). */
export const UNIX_PATH_MAX: number;

type SceneMethodName =
  | 'request' | 'create' | 'createCloth' | 'createSoftbody' | 'createMeshCloth' | 'skin' | 'pinBulk'
  | 'teleport' | 'topology' | 'set' | 'transform' | 'attach' | 'pin' | 'unpin' | 'wind' | 'gravity'
  | 'addCollider' | 'addTaperedCapsule' | 'moveCollider' | 'removeCollider' | 'enable' | 'step' | 'get'
  | 'subscribe' | 'unsubscribe' | 'status' | 'save' | 'record';

/**
 * A scene on one server: the Client's commands, each sending "scene" where
 * the command takes one. Without instances, step, status, subscribe and
 * destroy act on the whole scene.
 */
export interface Scene extends Pick<Client, SceneMethodName> {}
export class Scene {
  constructor(client: Client, name: string);
  readonly name: string;
  /** "host:port" of the scene's server. */
  readonly endpoint: string;
  /** The connection the scene's requests go through (opened on first use when sharded). */
  client(): Promise<Client>;
  /** Destroys one instance of the scene, or without an id the whole scene. */
  destroy(instance?: number): Promise<void>;
  /** Ties the scene to this connection (ephemeral true), lets go (false), or asks (unset). */
  scene(options?: { ephemeral?: boolean }): Promise<SceneReply>;
  /** The scene's entry of `scenes` ([] when it has none). */
  scenes(): Promise<SceneSummary[]>;
  /** The ids of the scene's instances. */
  instances(): Promise<number[]>;
}

export interface ShardedClientOptions extends Omit<ClientOptions, 'host' | 'port' | 'path'> {
  /** How long a connection may take before the endpoint is unavailable (10000). */
  connectTimeoutMs?: number;
}

/**
 * Scenes spread over several servers by rendezvous hashing, with no
 * coordinator: every process given the same endpoint list sends a scene to
 * the same server. One lazy connection per endpoint.
 */
export class ShardedClient {
  constructor(endpoints: Iterable<string>, options?: ShardedClientOptions);
  readonly endpoints: readonly string[];
  /** The endpoints with an open connection. */
  readonly connected: string[];
  /** The endpoint that serves `scene` (no connection is made). */
  endpoint(scene: string): string;
  /** A Scene bound to its server. */
  scene(name: string): Scene;
  /** The connection to `endpoint` (its hello must list "scenes": else FeatureMissing); rejects with EndpointUnavailable naming it. */
  client(endpoint: string, scene?: string): Promise<Client>;
  /** Every scene of every endpoint, sorted by name, each with its endpoint; one unreachable endpoint rejects (EndpointUnavailable). */
  scenes(): Promise<Array<SceneSummary & { endpoint: string }>>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Every reply: the echoed id, ok, and the command's members. */
export interface Reply {
  id?: number | string;
  ok: boolean;
  [member: string]: unknown;
}

export interface ClientOptions {
  /** Default "127.0.0.1". */
  host?: string;
  /** Default 7878. */
  port?: number;
  /**
   * The Unix socket of a clothd on this host (`clothd --unix PATH`), used
   * instead of host and port, as net.connect takes it. Errors and
   * `endpoint` then name "unix:PATH". A path longer than UNIX_PATH_MAX
   * bytes throws a RangeError naming `path`.
   */
  path?: string;
  /** TCP_NODELAY, default true (not used over a Unix socket). */
  noDelay?: boolean;
  /** Bound on one reply line or frame in bytes (default 512 MiB); a ProtocolError beyond. */
  maxMessageBytes?: number;
  /** The socket's writable high-water mark (Node's default when omitted). */
  writableHighWaterMark?: number;
  /**
   * The server's token (--token-file), sent with `auth` before anything else.
   * Omitted: $CLOTHD_TOKEN if set; '' or null: no `auth` at all.
   */
  token?: string | null;
  /**
   * Ask the server (with `hello`) to refuse, on this connection, a request
   * with a member it does not read (invalid_argument) instead of warning.
   * Requires the "strict" feature.
   */
  strict?: boolean;
  /**
   * Features the server's hello must list: connect() rejects with
   * FeatureMissing naming the server and what it lacks.
   */
  require?: Iterable<Feature>;
  /** Send `hello` on connect (default true); false: nothing is known of the server and no call is checked. */
  hello?: boolean;
}

/** What `auth` grants: everything, or only auth, ping, stats, status, get, topology, subscribe, unsubscribe. */
export type Access = 'full' | 'readonly';

/** The options `set` can change on a live instance (PROTOCOL.md, create and set). */
export interface InstanceOptions {
  /** kg, total. */
  mass?: number;
  /** [0, 1], the seed's structural stiffness (or stretchCompliance). */
  stiffness?: number;
  /** [0, 1] (or bendCompliance). */
  bendStiffness?: number;
  /** [0, 1], the seed's fraction of velocity removed per step; given, it switches velocityRetention (default 0.547 kept per second) off. */
  damping?: number;
  /** [1, 256] constraint passes per substep (or iterations). */
  solverIterations?: number;
  /** m/s². */
  gravity?: Vec3Like;
  /** m/N, XPBD for structural and shear constraints; 0 is inextensible. */
  stretchCompliance?: number;
  /** m/N, XPBD for bending. */
  bendCompliance?: number;
  /** The XPBD seed's name for solverIterations. */
  iterations?: number;
  /** [0, 64] substeps per step; 0: automatic (ceil(dt x solverFrequency), 1..16). */
  substeps?: number;
  /** Hz: with substeps 0 (automatic), substeps of at most 1/solverFrequency s (default 360). */
  solverFrequency?: number;
  /** (0, 1], fraction of velocity kept per second (default 0.5471566: the seed's 0.01 a step at 60 Hz). */
  velocityRetention?: number;
  /** m held off every collider surface. */
  thickness?: number;
  /** kg per particle for two-way coupling; unset (default): each particle's own mass. */
  particleMass?: number;
  /** "aero" (wind is an air velocity; flat plates), "constant" (an acceleration)
   *  or "dragLift" (an air velocity; drag and lift coefficients). */
  windModel?: 'aero' | 'constant' | 'dragLift';
  airDensity?: number;
  drag?: number;
  lift?: number;
  tethers?: boolean;
  tetherScale?: number;
  /** m/s; 0 never sleeps. */
  sleepThreshold?: number;
  /** [0, 3] level of detail, 0 full; each level about half the work of the one before. */
  lod?: number;
  /** How much the instance's detail matters; a step's budget lowers the lowest first. */
  priority?: number;
  /** m, 0 is off: unconnected particles closer than this push apart. */
  selfDistance?: number;
  /** [0, 1]: the share of the inertia frame's move the cloth feels (default 1; 0: its local space). */
  linearInertia?: number;
  /** [0, 1]: the same for the frame's rotation. */
  angularInertia?: number;
  /** [0, 1000]: a structural edge stretched beyond this strain tears (a mesh cloth, or a grid created with it); 0 never. */
  tearStrain?: number;
  /** Painted per vertex (PROTOCOL.md "Painted properties"): a number for every
   *  vertex, one per vertex, or null (unpainted again). [0, 1000]; 0: moved only by its skin. */
  invMassScale?: Paint;
  /** m from the skinned position; 0: follows the skin exactly. */
  maxDistance?: Paint;
  /** m behind the skinned position (along -normal) where the backstop sphere's surface lies. */
  backstopDistance?: Paint;
  /** m, the backstop sphere's radius; 0: none. */
  backstopRadius?: Paint;
  /** XPBD only: structural and shear compliance times the mean of the ends' values. */
  stretchComplianceScale?: Paint;
  /** XPBD only: the same for bending. */
  bendComplianceScale?: Paint;
}

/** A painted property's value: one for all vertices, one per vertex, or null (clear). */
export type Paint = number | ArrayLike<number> | null;

/** The painted properties' names, as topology reports them. */
export type PaintedName =
  | 'invMassScale'
  | 'maxDistance'
  | 'backstopDistance'
  | 'backstopRadius'
  | 'stretchComplianceScale'
  | 'bendComplianceScale';

/** Where a new instance goes and how long it lives (PROTOCOL.md, Scenes and lifetimes). */
export interface SceneOptions {
  /** The scene it belongs to, 1-64 of A-Z a-z 0-9 . _ : - ("default" when unset). */
  scene?: string;
  /** Destroyed when this connection closes. */
  ephemeral?: boolean;
}

export interface MeshClothOptions extends InstanceOptions, SceneOptions {
  /** u, v per vertex; handed back by topology. */
  uvs?: ArrayLike<number>;
}

export interface TeleportOptions {
  translation?: Vec3Like;
  /** A quaternion [x, y, z, w]. */
  rotation?: ArrayLike<number>;
  pivot?: Vec3Like;
}

export interface Topology {
  instance: number;
  type: 'cloth' | 'softbody';
  particles: number;
  /** 3 particle indices per triangle, counter-clockwise from outside. */
  triangles: Uint32Array;
  /** u, v per particle: a grid, or a mesh cloth created with uvs; else null. */
  uvs: Float32Array | null;
  /** The painted properties, one value per particle; unpainted ones are absent. */
  painted: Partial<Record<PaintedName, Float32Array>>;
  /** The instance has had a skin. */
  skinned: boolean;
  reply: Reply;
}

/** A soft body (PROTOCOL.md, create, "Soft bodies"): a generated shape or a tetrahedral mesh. */
export interface CreateSoftbodyOptions extends InstanceOptions, SceneOptions {
  /** A generated mesh: 'ball' (radius, resolution, center) or 'box' (size, cells, origin). */
  shape?: 'ball' | 'box';
  /** Ball radius (default 0.5). */
  radius?: number;
  /** Ball grid resolution, 2..48 (default 6). */
  resolution?: number;
  center?: Vec3Like;
  /** Box size (default [1, 1, 1]). */
  size?: Vec3Like;
  /** Box cubes per axis, 1..64 each (default [4, 4, 4]). */
  cells?: ArrayLike<number>;
  origin?: Vec3Like;
  /** A given mesh: vec3s or a flat list (x, y, z per vertex). */
  vertices?: ArrayLike<Vec3Like> | ArrayLike<number>;
  /** 4 vertex indices per tetrahedron, each positively oriented. */
  tetrahedra?: ArrayLike<number>;
  /** [0, 1], the seed's volume preservation (or volumeCompliance). */
  volumeStiffness?: number;
  volumeCompliance?: number;
  /** Pa: a material instead of compliances. */
  youngsModulus?: number;
  poissonRatio?: number;
}

/** hello's reply. */
export interface HelloReply extends Reply {
  server: string;
  version: string;
  protocol: number;
  strict: boolean;
  /** Every command the server knows. */
  commands: string[];
  features: Feature[];
  limits: ServerLimits;
}

export interface CreateClothOptions extends InstanceOptions, SceneOptions {
  width?: number;
  height?: number;
  spacing?: number;
  origin?: Vec3Like;
  right?: Vec3Like;
  down?: Vec3Like;
}

export interface PinOptions {
  /** With a single particle: where to pin it (default: where it is). */
  position?: Vec3Like;
  /** With a list of particles: one position per particle (default: where they are). */
  positions?: ArrayLike<Vec3Like>;
}

export type ColliderType = 'sphere' | 'capsule' | 'plane' | 'taperedCapsule' | 'box';

/** A unit quaternion [x, y, z, w]. */
export type QuatLike = ArrayLike<number>;

export interface AddColliderOptions {
  type: ColliderType;
  /** Centre; a tapered capsule's midpoint between its end spheres' centres; a point of a plane. */
  position?: Vec3Like;
  /** Plane normal or capsule axis (a tapered capsule's points from its radius end to its radius2 end); not for boxes. */
  normal?: Vec3Like;
  radius?: number;
  /** Capsules: total length including both caps. */
  height?: number;
  /** Tapered capsule: the radius of its +normal end (default: radius). */
  radius2?: number;
  /** Box: half its size along its own x, y, z (default [0.5, 0.5, 0.5]). */
  halfExtents?: Vec3Like;
  /** Box: its orientation, unit within 0.001 (default [0, 0, 0, 1]). */
  rotation?: QuatLike;
  /** Kinetic friction coefficient (default 0). */
  friction?: number;
  /** Static friction coefficient (default: friction). */
  staticFriction?: number;
  /** [0, 1]: share of the momentum reported back in step replies' impulses. */
  coupling?: number;
  /** A transform of the instance the collider follows (position and normal local to it). */
  attachment?: string;
}

export interface AttachOptions {
  /** With a single particle: its offset local to the transform. */
  offset?: Vec3Like;
  /** With a list of particles: one offset per particle. */
  offsets?: ArrayLike<Vec3Like>;
}

export interface MoveColliderOptions {
  position?: Vec3Like;
  /** Not for boxes. */
  normal?: Vec3Like;
  /** Boxes only. */
  rotation?: QuatLike;
}

export interface StepOptions {
  /** Seconds, in (0, 1]; default 1/60. */
  dt?: number;
  instances?: ArrayLike<number>;
  instance?: number;
  /** [0, 60000] ms, a soft time budget (0: none; unset: the server's --step-budget-ms). */
  budgetMs?: number;
  /** Without instances: every instance of this scene; with them: each must be in it.
   * With neither, a step steps every instance of every scene (v1). */
  scene?: string;
}

/** An instance the budget stepped below its own level of detail. */
export interface Degraded {
  instance: number;
  /** The level it ran at. */
  lod: number;
}

export interface Impulse {
  instance: number;
  collider: number;
  /** N·s. */
  linear: Vec3;
  /** N·m·s about the collider's position. */
  angular: Vec3;
}

export interface StepReply extends Reply {
  stepped: number;
  unstable: number[];
  sleeping: number[];
  impulses: Impulse[];
  /** With a budget only: the budget applied, the plan's prediction, the time taken (ms). */
  budgetMs?: number;
  predictedMs?: number;
  actualMs?: number;
  /** With a budget only: the instances stepped below their own level. */
  degraded?: Degraded[];
  /** The cloths that tore after this step (absent when none did): fetch their topology again. */
  torn?: number[];
}

export interface Collider {
  collider: number;
  type: ColliderType;
  position: Vec3;
  /** Unit; a box's own +y axis. */
  normal: Vec3;
  radius: number;
  height: number;
  /** Tapered capsules only. */
  radius2?: number;
  /** Boxes only. */
  halfExtents?: Vec3;
  /** Boxes only: [x, y, z, w]. */
  rotation?: [number, number, number, number];
}

export interface SelfCollisionStats {
  /** Candidate-pair searches. */
  searches: number;
  /** Candidate pairs those searches kept. */
  pairs: number;
  /** Searches that filled the pair list (48 per particle). */
  overflows: number;
}

export interface InstanceState {
  instance: number;
  type: string;
  scene: string;
  /** Destroyed when a connection closes (its own tie or its scene's). */
  ephemeral: boolean;
  width: number;
  height: number;
  frame: number;
  time: number;
  enabled: boolean;
  unstable: boolean;
  sleeping: boolean;
  /** Its own level of detail (the `lod` option). */
  lod: number;
  /** The level its last step ran at (its own before the first step). */
  currentLod: number;
  /** That level was a step budget's lowering (or the way back from it). */
  degraded: boolean;
  /** Its `priority` option: the lowest is degraded first. */
  priority: number;
  /** x, y, z of every particle, exactly the server's float32 values. */
  positions: Float32Array;
  pinned: number[];
  colliders: Collider[];
  /** While selfDistance > 0: the self-collision work since creation; else null. */
  selfCollision: SelfCollisionStats | null;
  /** With get(id, {velocities: true}): 3 floats per particle, m/s over the last
   * substep (zero before the first step and while asleep); else null. */
  velocities: Float32Array | null;
  /** With get(id, {normals: true}): unit area-weighted vertex normals (cloth:
   * the side of down x right; soft body: outwards; (0,0,0) without a
   * triangle); else null. */
  normals: Float32Array | null;
  /** The raw get reply. */
  reply: Reply;
}

export interface GetOptions {
  /** Add each particle's velocity. */
  velocities?: boolean;
  /** Add each particle's unit normal. */
  normals?: boolean;
}

/** What a frame can carry besides the positions (always sent). */
export type Channel = 'positions' | 'velocities' | 'normals';

export interface SubscribeOptions {
  instance?: number;
  instances?: ArrayLike<number>;
  /** Alone: every instance of the scene, those created later included. */
  scene?: string;
  /** Frames with 16-bit positions in the bounding box (flags bit 0). */
  quantize?: boolean;
  /** Only frames whose number is a multiple of this (1..1000). */
  every?: number;
  /** What frames carry: ["positions"] by default; add "velocities" and/or "normals". */
  channels?: readonly Channel[];
  /**
   * Frames through the server's shared-memory ring (feature "shm"; a
   * process on clothd's host, as clothd's user), delivered as the same
   * frames; rejects with ShmUnavailable when the ring cannot be opened.
   */
  shm?: boolean;
}

/** The shared-memory ring a subscribe with shm names. */
export interface ShmRing {
  /** The POSIX shared-memory name: the object is "/dev/shm" + name. */
  name: string;
  /** Its data's size in bytes (--shm-mb MiB). */
  size: number;
}

export interface SubscribeReply extends Reply {
  instances?: number[];
  all?: true;
  /** A scene's subscription. */
  scene?: string;
  /** With shm: the ring the frames come through. */
  shm?: ShmRing;
}

export interface UnsubscribeOptions {
  instance?: number;
  instances?: ArrayLike<number>;
  scene?: string;
}

export interface DestroyOptions {
  instance?: number;
  instances?: ArrayLike<number>;
  /** Alone: every instance of the scene. */
  scene?: string;
}

/** One scene in `scenes` and `status`. */
export interface SceneSummary {
  scene: string;
  instances: number;
  /** A connection holds it (its instances go when that connection closes). */
  ephemeral: boolean;
}

export interface SceneReply extends Reply {
  scene: string;
  instances: number[];
  ephemeral: boolean;
  /** Held by this connection. */
  owned: boolean;
}

export interface InstanceSummary {
  instance: number;
  type: string;
  scene: string;
  ephemeral: boolean;
  particles: number;
  constraints: number;
  colliders: number;
  enabled: boolean;
  unstable: boolean;
  sleeping: boolean;
  frame: number;
}

export interface StatusReply extends Reply {
  instances: InstanceSummary[];
  scenes: SceneSummary[];
  workers: number;
  globalWind: Vec3;
  version: string;
  debug: boolean;
  text: string;
}

/** The `stats` reply: the server's counters since it started. */
export interface StatsReply extends Reply {
  version: string;
  /** The distance solve's SIMD path: "scalar", "avx2" or "avx512". */
  simd: string;
  workers: number;
  uptimeSeconds: number;
  connections: { current: number; total: number; refused: number; limit: number };
  instances: { awake: number; sleeping: number; disabled: number; unstable: number; limit: number };
  particles: { current: number; limit: number };
  steps: {
    total: number;
    instanceSteps: number;
    slow: number;
    /** Steps with a time budget, those slower than it, instances stepped below their own level. */
    budget: { steps: number; overruns: number; degradedInstances: number };
    perSecond: number;
    /** Time from a step's start to its reply: `counts` per bucket (not cumulative), one more than `bounds` (the last is above them all). */
    durationSeconds: { count: number; sum: number; bounds: number[]; counts: number[] };
  };
  sent: { replyBytes: number; eventBytes: number; frameBytes: number; frames: number; framesSkipped: number };
  /** Request lines naming a known command, by command. */
  requests: Record<string, number>;
  /** Error replies by code (every code listed). */
  errors: Record<ErrorCode, number>;
}

/** A server event line, e.g. {event: "debug", enabled: true}. */
export interface ServerEvent {
  event: string;
  [member: string]: unknown;
}

/** One decoded binary frame. */
export interface Frame {
  instance: number;
  /** Steps the instance has taken (exact up to 2^53). */
  frame: number;
  /** Simulated seconds. */
  time: number;
  /** Particle count N. */
  count: number;
  flags: number;
  /** flags bit 0: the positions were decoded from 16-bit values. */
  quantized: boolean;
  /** 3·N floats: x0, y0, z0, x1, ... */
  positions: Float32Array;
  /** A quantized frame's bounding box (float32 values); null for a plain frame. */
  bounds: { min: Vec3; max: Vec3 } | null;
  /** True when `positions` is a view on the received bytes (no copy). */
  view: boolean;
  /** flags bit 1 (channel "velocities"): 3·N floats, m/s; else null. */
  velocities: Float32Array | null;
  /** A quantized frame's velocity box; null otherwise. */
  velocityBounds: { min: Vec3; max: Vec3 } | null;
  /** flags bit 2 (channel "normals"): 3·N floats, unit or (0,0,0); else null. */
  normals: Float32Array | null;
}

export interface DecodeOptions {
  /** Copy a plain frame's positions even when a view is possible. */
  copy?: boolean;
  /** 3·N floats to decode the positions into in place (another length: a new array). */
  positions?: Float32Array | null;
  /** The same for the velocities (flags bit 1). */
  velocities?: Float32Array | null;
  /** The same for the normals (flags bit 2). */
  normals?: Float32Array | null;
}

/** A frame's header, checked against the bytes given. */
export interface FrameHeader {
  version: number;
  flags: number;
  quantized: boolean;
  /** The frame's length in bytes. */
  length: number;
  instance: number;
  frame: number;
  time: number;
  count: number;
}

/** Any binary form of one complete frame. */
export type FrameBytes = Uint8Array | ArrayBuffer | ArrayBufferView;

/**
 * Decodes one complete frame. Plain frames give a view on `bytes` when the
 * payload is 4-byte aligned (on a little-endian host) and no target array
 * is given, else a copy. Throws ProtocolError on a bad magic, version,
 * flags or length.
 */
export function decodeFrame(bytes: FrameBytes, options?: DecodeOptions): Frame;
/** Reads and checks the header of one complete frame (throws as decodeFrame). */
export function decodeHeader(bytes: FrameBytes): FrameHeader;

/** A shared-memory reference (flags bit 3, 56 bytes): the frame it names in the ring. */
export interface FrameReference {
  instance: number;
  frame: number;
  /** The frame's flags (without bit 3). */
  flags: number;
  count: number;
  /** The frame's running byte position in the ring (it starts at position mod size). */
  position: bigint;
  /** The frame's length in bytes. */
  length: number;
}

/**
 * Reads and checks a shared-memory reference; throws ProtocolError when it
 * is not 56 bytes or names no frame of its particles and flags. (A Client
 * resolves references itself; decodeFrame of one throws.)
 */
export function decodeReference(bytes: FrameBytes): FrameReference;
/** Length of a plain frame of `count` particles: 40 + 12·count. */
export function frameSize(count: number): number;
/** Length of a quantized frame of `count` particles: 64 + 6·count. */
export function quantizedFrameSize(count: number): number;
/** Length of a frame of `count` particles with `flags` (bits 0-2). */
export function frameSizeFlags(count: number, flags: number): number;
/** A quantized normal (two u16, octahedral) as a unit vector; (0,0) gives [0,0,0]. */
export function octahedralDecode(u: number, v: number): Vec3;

export const FRAME_MAGIC: readonly [0x89, 0x43, 0x4c, 0x46];
export const FRAME_VERSION: 1;
export const FRAME_HEADER_SIZE: 40;
export const FLAG_QUANTIZED: 1;
export const FLAG_VELOCITIES: 2;
export const FLAG_NORMALS: 4;
/** flags bit 3: a reference to a frame in the server's shared-memory ring. */
export const FLAG_SHARED: 8;
export const SHM_REFERENCE_SIZE: 56;
export const CHANNELS: readonly Channel[];

/**
 * One binary request (PROTOCOL.md "Binary requests"): kind 1 skin, 2 pin;
 * `id` the reply's id (0: none); flags bit 0: normals follow (skin); the
 * arrays (Uint32Array, Float32Array) written little-endian after the header.
 */
export function encodeBinaryRequest(
  kind: number,
  instance: number,
  id: number,
  count: number,
  flags: number,
  arrays: ArrayLike<Uint32Array | Float32Array>,
): Buffer;
/** This package's version. */
export const VERSION: string;
/** "CLOTHD_TOKEN": where a client finds its token when given none. */
export const TOKEN_ENV: 'CLOTHD_TOKEN';

export interface FramesOptions {
  /** Frames kept for a slow consumer (default 256; the newest are kept). */
  maxQueue?: number;
  /** Only this instance's frames. */
  instance?: number;
  /** Ends the iteration (next() rejects with the abort reason). */
  signal?: AbortSignal;
}

/** The async iterator of Client.frames(). */
export class FrameIterator implements AsyncIterableIterator<Frame> {
  private constructor();
  /** Frames dropped because the queue was full. */
  readonly dropped: number;
  /** Frames received and not yet taken. */
  readonly queued: number;
  readonly maxQueue: number;
  next(): Promise<IteratorResult<Frame, undefined>>;
  return(): Promise<IteratorResult<Frame, undefined>>;
  [Symbol.asyncIterator](): FrameIterator;
}

export interface ClientStats {
  requests: number;
  replies: number;
  frames: number;
  events: number;
  /** Frames of an unknown version skipped. */
  skippedFrames: number;
  /** Shared-memory frames the server overwrote in its ring before they were read: not delivered. */
  missedFrames: number;
  /** socket.write() calls (pipelined requests are written together). */
  writes: number;
  /** Times socket.write() reported a full buffer and the client waited for 'drain'. */
  drainWaits: number;
  /** Request lines in the client's queue, not yet written to the socket. */
  queuedRequests: number;
}

export type ClientState = 'new' | 'connecting' | 'open' | 'closed';

export interface ClientEvents {
  frame: [frame: Frame];
  event: [event: ServerEvent];
  /** A reply's warning (ClothdWarning), or a skipped frame (ProtocolError). */
  warning: [warning: ClothdWarning | ProtocolError];
  error: [error: ProtocolError];
  close: [error: Error | undefined];
}

export class Client extends EventEmitter {
  constructor(options?: ClientOptions);
  /** Creates a client and connects it. */
  static connect(options?: ClientOptions): Promise<Client>;

  readonly host: string;
  readonly port: number;
  /** The Unix socket path, or null over TCP. */
  readonly path: string | null;
  readonly state: ClientState;
  readonly pendingRequests: number;
  readonly stats: ClientStats;
  /** Resolves once the connection is closed. */
  readonly closed: Promise<void>;
  /** What `auth` granted on this connection; null before any `auth`. */
  readonly access: Access | null;
  /** The token the client authenticates with; null for none. */
  readonly token: string | null;
  /** "host:port" of the server ("[::1]:7878" for IPv6), or "unix:PATH". */
  readonly endpoint: string;
  /**
   * The features the server's hello listed; [] for a server without hello;
   * null while nothing is known (before connect, hello: false, or hello
   * refused before `auth`).
   */
  readonly features: readonly string[] | null;
  /** The server's limits from its hello, or null. */
  readonly limits: ServerLimits | null;
  /** The server's version from its hello, or null. */
  readonly serverVersion: string | null;
  /** The server's whole hello reply, or null. */
  readonly helloReply: HelloReply | null;
  /** Whether the server's hello listed `feature` (false when nothing is known). */
  supports(feature: Feature | string): boolean;
  /** The shared-memory ring this connection reads (subscribe with shm), or null. */
  readonly shm: ShmRing | null;

  /**
   * Opens the connection (requests made before are queued and checked
   * against the server's features once its hello is in), sends `auth` first
   * with a token, then `hello`; rejects with Unauthorized (and closes) when
   * the token is refused, with FeatureMissing when a required feature
   * is missing.
   */
  connect(): Promise<this>;
  /** Closes now: pending requests reject with ConnectionClosed. */
  close(): Promise<void>;
  /** Waits for every pending reply, then closes. */
  end(): Promise<void>;

  /** Sends {id, cmd, ...fields}; resolves with the ok reply, rejects with ClothdError. */
  request<T extends Reply = Reply>(cmd: string, fields?: Record<string, unknown>): Promise<T>;
  /** Sends one raw line; resolves with the next reply, ok or not, unchecked. */
  rawRequest(line: string | Buffer): Promise<Reply>;

  /** An async iterator over frames received from now on. */
  frames(options?: FramesOptions): FrameIterator;

  /** Creates an instance of `type` ("cloth" or "softbody"), in options.scene, ephemeral with options.ephemeral; createCloth / createSoftbody / createMeshCloth name the fields. */
  create(type?: 'cloth' | 'softbody' | string, options?: CreateClothOptions | CreateSoftbodyOptions): Promise<number>;
  createCloth(options?: CreateClothOptions): Promise<number>;
  /** Creates a soft body: a generated shape ('ball' or 'box') or vertices + tetrahedra. */
  createSoftbody(options: CreateSoftbodyOptions): Promise<number>;
  /** The handshake again (kept as features, limits, serverVersion); `strict` true makes the server refuse unknown members on this connection. */
  hello(options?: { strict?: boolean }): Promise<HelloReply>;
  /** Changes a live instance's options (not the layout). */
  set(instance: number, options: InstanceOptions): Promise<void>;
  /** Creates or moves a named transform; rotation is a quaternion [x, y, z, w]; inertiaFrame marks (or unmarks) the instance's inertia frame. */
  transform(
    instance: number,
    name: string,
    position: Vec3Like,
    rotation?: ArrayLike<number>,
    options?: { inertiaFrame?: boolean },
  ): Promise<void>;
  /** A cloth cut as a triangle mesh: vertices as vec3s or flat (x, y, z each), 3 indices per triangle. */
  createMeshCloth(
    vertices: ArrayLike<Vec3Like> | ArrayLike<number>,
    triangles: ArrayLike<number>,
    options?: MeshClothOptions,
  ): Promise<number>;
  /** The garment's skinned pose for the next step; a binary request unless options.json. */
  skin(
    instance: number,
    positions: ArrayLike<Vec3Like> | ArrayLike<number>,
    normals?: ArrayLike<Vec3Like> | ArrayLike<number>,
    options?: { json?: boolean },
  ): Promise<void>;
  /** pin with positions as one binary request; resolves with `pinned`. */
  pinBulk(instance: number, particles: ArrayLike<number>, positions: ArrayLike<Vec3Like> | ArrayLike<number>): Promise<number>;
  /** Moves the whole instance rigidly, with no velocity spike. */
  teleport(instance: number, options?: TeleportOptions): Promise<void>;
  /** Triangles, uvs, painted properties and whether the instance is skinned. */
  topology(instance: number): Promise<Topology>;
  attach(instance: number, name: string, particle: number, options?: { offset?: Vec3Like }): Promise<number>;
  attach(instance: number, name: string, particles: ArrayLike<number>, options?: { offsets?: ArrayLike<Vec3Like> }): Promise<number>;
  /** One instance, a list, or every instance of a scene; resolves with the destroyed ids. */
  destroy(instance: number | DestroyOptions): Promise<number[]>;
  pin(instance: number, particle: number, options?: { position?: Vec3Like }): Promise<number>;
  pin(instance: number, particles: ArrayLike<number>, options?: { positions?: ArrayLike<Vec3Like> }): Promise<number>;
  unpin(instance: number, particles: number | ArrayLike<number>): Promise<number>;
  /** Sets an instance's wind, or the global wind without `instance`. */
  wind(wind: Vec3Like, instance?: number): Promise<Vec3>;
  gravity(instance: number, gravity: Vec3Like): Promise<void>;
  addCollider(instance: number, options: AddColliderOptions): Promise<number>;
  /** A limb from joint start (radius) to joint end (radius2) as a "taperedCapsule". */
  addTaperedCapsule(instance: number, start: Vec3Like, end: Vec3Like, radius: number, radius2: number,
                    options?: Omit<AddColliderOptions, 'type' | 'position' | 'normal' | 'radius' | 'radius2' | 'height'>): Promise<number>;
  moveCollider(instance: number, collider: number, options: MoveColliderOptions): Promise<void>;
  removeCollider(instance: number, collider: number): Promise<void>;
  enable(instance: number, enabled?: boolean): Promise<boolean>;
  /** A number is taken as dt. */
  step(options?: StepOptions | number): Promise<StepReply>;
  get(instance: number, options?: GetOptions): Promise<InstanceState>;
  subscribe(options?: SubscribeOptions): Promise<SubscribeReply>;
  unsubscribe(options?: UnsubscribeOptions): Promise<void>;
  /** Writes the snapshot `name` of every instance (or opts.instances) to the server's --data-dir (feature "snapshots"), or with opts.memory into this connection's memory. */
  save(name: string, opts?: { instance?: number; instances?: number[]; scene?: string; memory?: boolean }): Promise<{ name: string; instances: number; bytes: number }>;
  /** Starts the journal `name` (or with opts.stop ends the one being written). */
  record(name: string | null, opts?: { instance?: number; instances?: number[]; scene?: string; stop?: boolean }): Promise<Record<string, unknown>>;
  /** Rebuilds the journal's instances under new ids at frame opts.to (all of it without). */
  replay(name: string, opts?: { to?: number }): Promise<{ instances: number[]; recorded: number[]; frames: number; journalFrames: number; complete: boolean; warning?: string }>;
  /** Loads the snapshot `name` (adding under the saved ids, or with replace the whole world); resolves with the loaded ids. */
  load(name: string, opts?: { replace?: boolean; memory?: boolean }): Promise<number[]>;
  status(options?: { scene?: string }): Promise<StatusReply>;
  /** Ties the scene to this connection (ephemeral true), lets go (false), or asks (unset). */
  scene(name: string, options?: { ephemeral?: boolean }): Promise<SceneReply>;
  /** Every scene (or options.scene's), sorted by name. */
  scenes(options?: { scene?: string }): Promise<SceneSummary[]>;
  /** The server-wide global wind (from status). */
  globalWind(): Promise<Vec3>;
  /** Sets the debug overlay flag, or reads it without an argument. */
  debug(enabled?: boolean): Promise<boolean>;
  /** The `stats` command: the server's counters (connections, instances by state, steps, bytes and frames, requests, errors); `stats` is this client's own. */
  serverStats(): Promise<StatsReply>;
  /** Round trip of a `ping` in milliseconds. */
  ping(): Promise<number>;
  /** Presents a token on this connection; resolves with the access granted and keeps the token. */
  auth(token: string): Promise<Access>;

  on<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this;
  once<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this;
  off<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this;
  addListener<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this;
  removeListener<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this;
  emit<K extends keyof ClientEvents>(event: K, ...args: ClientEvents[K]): boolean;
}
