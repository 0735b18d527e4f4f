// clothd viewer page: one WebSocket to the viewer server (binary frames as
// clothd sends them, JSON metadata), one three.js scene with every instance,
// the simulation's toolbar (sim.js), the step-time plot (plot.js) and the
// selected instance's kinetic-energy plot (energy.js).

import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { decodeFrame, decodeHeader } from './frame.js';
import { createTimeline } from './timeline.js';
import { createSim } from './sim.js';
import { createPlot } from './plot.js';
import { createEnergyPlot } from './energy.js';

// ---- state and test hook ---------------------------------------------------

// Instance colours: warm ones for cloth, cool ones for soft bodies, picked by
// slot (the low 16 bits of the id), the same in every viewer.
const PALETTES = {
  cloth: [0xe8743b, 0xd9b43c, 0xd9546e, 0xc97f3f],
  softbody: [0x1fa88e, 0x6fbf4a, 0x9b6bd6, 0x3fc1d9],
};
const STATS_WINDOW_MS = 1000;
const HAIR = 0.002; // m: how far colliders and the ground are drawn inside their true surface
const IDLE_MS = 1500;

const state = {
  wsOpen: false,
  connected: false,
  clothd: '',
  version: null,
  access: null,         // what clothd granted the relay: 'full', 'readonly', null (not connected)
  authError: null,      // clothd's `unauthorized` message while it refuses the relay
  debug: false,
  globalWind: [0, 0, 0],
  meta: new Map(),      // id -> metadata from the server
  scenes: null,         // clothd's scenes [{scene, instances, ephemeral}] (null: a clothd without scenes)
  topology: new Map(),  // id -> {kind, particles, triangles, uvs, maxIndex} from clothd's `topology`
  views: new Map(),     // id -> InstanceView
  incoming: new Map(),  // id -> newest frame (ArrayBuffer) not yet drawn
  arrivals: new Map(),  // id -> [{t, frame}] within the stats window
  lastFrame: new Map(), // id -> {frame, time, t}
  selected: null,
  framedOnce: false,
  channels: [],         // what the relay's frames carry besides positions ('velocities', 'normals')
  speedColours: false,  // colour by speed (needs the velocities channel)
  shadows: true,        // the sun casts shadows onto the ground and the scene
};

// Read by the end-to-end test (and handy in the console).
const hook = {
  wsOpen: false,
  connected: false,
  access: null,
  authError: null,
  frames: {},      // id -> newest frame number received
  rendered: {},    // id -> frame number on screen
  instances: [],   // metadata as the server sent it
  scenes: null,    // the list's groups as shown: [{scene, ephemeral, collapsed, instances}], null when flat
  topology: {},    // id -> triangle count of the topology received
  meshes: {},      // id -> what is drawn: {type, kind: 'mesh'|'points', source: 'topology'|'grid'|null, triangles, particles}
  normals: {},     // id -> 'frame' (the frame's normals channel) or 'computed' (from the triangles), as last drawn
  speeds: {},      // id -> [slowest, fastest] particle speed (m/s) of the last frame with velocities
  channels: [],    // the relay's frame channels
  speedColours: false,
  shadows: true,
  normalsOf: (id) => Array.from(state.views.get(id)?.normalAttr?.array ?? []),
  coloursOf: (id) => Array.from(state.views.get(id)?.colourAttr?.array ?? []),
  positions: (id) => Array.from(state.views.get(id)?.positions?.array ?? []),
  colours: {},     // id -> '#rrggbb', the instance's colour
  debug: false,
  globalWind: [0, 0, 0],
  selected: null,
  renders: 0,
  decodeErrors: 0,
};
window.__clothd = hook;

const $ = (id) => document.getElementById(id);

// ---- three.js scene --------------------------------------------------------

const canvas = $('scene');
const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x1b1e24);

const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 2000);
camera.position.set(1.6, 2.4, 5.5);
const controls = new OrbitControls(camera, canvas);
controls.target.set(0, 1, 0);
controls.enableDamping = true;
controls.dampingFactor = 0.12;
controls.update();

scene.add(new THREE.HemisphereLight(0xdde6f2, 0x3a3530, 0.9));
// The sun casts the shadows (Display: Shadows): one directional light with
// a 1024² map whose box follows what is in the scene (fitShadow), onto the
// ground and onto the instances and colliders themselves.
const SUN_DIR = new THREE.Vector3(-2.5, 5, 3.5).normalize();
const sun = new THREE.DirectionalLight(0xfff6ea, 2.6);
sun.position.copy(SUN_DIR).multiplyScalar(6.6);
sun.shadow.mapSize.set(1024, 1024);
sun.shadow.bias = -0.0004;
sun.shadow.intensity = 0.75; // the hemisphere light is not all that lights a shadow
scene.add(sun, sun.target);
renderer.shadowMap.enabled = true;
renderer.shadowMap.type = THREE.PCFShadowMap;
const fill = new THREE.DirectionalLight(0xbfd4ff, 0.8);
fill.position.set(4, 1.5, -3);
scene.add(fill);

const grid = new THREE.GridHelper(20, 40, 0x4a5060, 0x2c3038);
grid.position.y = -HAIR; // under a cloth lying on a floor at y = 0
scene.add(grid);
// The ground that receives the shadows, at y = 0 as the grid: a warm grey
// (neither a cloth's, a soft body's nor a collider's colour), a hair below
// 0 and pushed back in depth so that a cloth lying at y = 0 stays in front.
const ground = new THREE.Mesh(
  new THREE.PlaneGeometry(20, 20).rotateX(-Math.PI / 2),
  new THREE.MeshLambertMaterial({ color: 0x4a4640, polygonOffset: true, polygonOffsetFactor: 2, polygonOffsetUnits: 4 }),
);
ground.position.y = -2 * HAIR;
ground.receiveShadow = true;
ground.renderOrder = -1;
scene.add(ground);
const axes = new THREE.AxesHelper(0.5);
axes.visible = false;
scene.add(axes);

const selectionBox = new THREE.Box3Helper(new THREE.Box3(), 0x4c9ffe);
selectionBox.visible = false;
scene.add(selectionBox);

let dirty = true;
const markDirty = () => { dirty = true; };
controls.addEventListener('change', markDirty);

function resize() {
  const r = canvas.parentElement.getBoundingClientRect();
  const w = Math.max(1, Math.floor(r.width));
  const h = Math.max(1, Math.floor(r.height));
  renderer.setSize(w, h, false);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  markDirty();
}
new ResizeObserver(resize).observe(canvas.parentElement);
resize();

// ---- one instance in the scene -----------------------------------------------

function colourOf(id, type) {
  const p = PALETTES[type] ?? PALETTES.cloth;
  const slot = colourAliases.get(id) ?? id; // a replayed instance wears its recorded one's colour
  return p[((slot & 0xffff) - 1 + p.length) % p.length];
}

const hex = (c) => `#${c.toString(16).padStart(6, '0')}`;

// Speed colours: blue at rest, through cyan, green and yellow, to red at
// SPEED_MAX m/s and beyond (a fixed scale, so that colours compare across
// frames and instances).
const SPEED_MAX = 3;
const SPEED_RAMP = [[0.13, 0.28, 0.85], [0.1, 0.75, 0.9], [0.2, 0.8, 0.3], [0.95, 0.85, 0.15], [0.9, 0.15, 0.1]];
function speedColour(speed, out, i) {
  const t = Math.min(Math.max(speed / SPEED_MAX, 0), 1) * (SPEED_RAMP.length - 1);
  const k = Math.min(Math.floor(t), SPEED_RAMP.length - 2);
  const f = t - k;
  for (let c = 0; c < 3; c++) out[i + c] = SPEED_RAMP[k][c] * (1 - f) + SPEED_RAMP[k + 1][c] * f;
}

// The fallback when clothd gives no topology: the triangles of a
// width x height grid, two per quad (tl, bl, tr, tr, bl, br), as clothd's own.
function gridIndex(w, h) {
  const n = w * h;
  const tris = new (n > 65535 ? Uint32Array : Uint16Array)((w - 1) * (h - 1) * 6);
  let k = 0;
  for (let y = 0; y < h - 1; y++) {
    for (let x = 0; x < w - 1; x++) {
      const tl = y * w + x;
      const tr = tl + 1;
      const bl = tl + w;
      const br = bl + 1;
      tris[k++] = tl; tris[k++] = bl; tris[k++] = tr;
      tris[k++] = tr; tris[k++] = bl; tris[k++] = br;
    }
  }
  return tris;
}

// Line pairs of the grid's constraints: structural (neighbours along x and
// y) and shear (both diagonals of each quad), as clothd builds them.
function constraintIndex(w, h) {
  const n = w * h;
  const Arr = n > 65535 ? Uint32Array : Uint16Array;
  const structural = new Arr(((w - 1) * h + w * (h - 1)) * 2);
  const shear = new Arr((w - 1) * (h - 1) * 4);
  let s = 0;
  let d = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      if (x + 1 < w) { structural[s++] = i; structural[s++] = i + 1; }
      if (y + 1 < h) { structural[s++] = i; structural[s++] = i + w; }
      if (x + 1 < w && y + 1 < h) {
        shear[d++] = i; shear[d++] = i + w + 1;
        shear[d++] = i + 1; shear[d++] = i + w;
      }
    }
  }
  return { structural, shear };
}

// The grid's UVs, u = x/(width-1), v = y/(height-1) (the fallback too).
function gridUvs(w, h) {
  const uv = new Float32Array(2 * w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      uv[2 * (y * w + x)] = x / (w - 1);
      uv[2 * (y * w + x) + 1] = y / (h - 1);
    }
  }
  return uv;
}

// Line pairs of every distinct edge of a triangle list (a soft body's
// surface in the debug overlay).
function edgeIndex(tris, count) {
  const seen = new Set();
  const pairs = [];
  for (let t = 0; t + 2 < tris.length; t += 3) {
    for (let k = 0; k < 3; k++) {
      const a = tris[t + k];
      const b = tris[t + ((k + 1) % 3)];
      const key = a < b ? a * count + b : b * count + a;
      if (seen.has(key)) continue;
      seen.add(key);
      pairs.push(a, b);
    }
  }
  return count > 65535 ? Uint32Array.from(pairs) : Uint16Array.from(pairs);
}

// Stores a `topology` message: indices as a typed array, checked once.
function setTopology(msg) {
  const n = Number(msg.particles);
  const list = Array.isArray(msg.triangles) ? msg.triangles : [];
  let maxIndex = list.length % 3 === 0 ? -1 : Infinity;
  for (const i of list) {
    if (!Number.isInteger(i) || i < 0) { maxIndex = Infinity; break; }
    if (i > maxIndex) maxIndex = i;
  }
  const Arr = n > 65535 ? Uint32Array : Uint16Array;
  const uvs = Array.isArray(msg.uvs) && msg.uvs.length === 2 * n ? Float32Array.from(msg.uvs) : null;
  state.topology.set(msg.instance, { kind: msg.kind, particles: n, triangles: Arr.from(list), uvs, maxIndex });
  hook.topology[msg.instance] = Math.floor(list.length / 3);
  // Drawn anew from these triangles (with the newest frame).
  state.views.get(msg.instance)?.resetSurface();
  markDirty();
}

// The largest circumradius of the triangles (their longest edge's half for
// an obtuse one, whose circumcentre lies outside it), with 15% more for the
// stretch of a cloth pulled over a collider: how far the middle of a
// triangle can sink into a curved collider its corners rest on (chordSag).
function triangleReach(p, index) {
  if (!index) return 0;
  let reach = 0;
  for (let t = 0; t + 2 < index.length; t += 3) {
    const a = 3 * index[t];
    const b = 3 * index[t + 1];
    const c = 3 * index[t + 2];
    const ab = (p[b] - p[a]) ** 2 + (p[b + 1] - p[a + 1]) ** 2 + (p[b + 2] - p[a + 2]) ** 2;
    const bc = (p[c] - p[b]) ** 2 + (p[c + 1] - p[b + 1]) ** 2 + (p[c + 2] - p[b + 2]) ** 2;
    const ca = (p[a] - p[c]) ** 2 + (p[a + 1] - p[c + 1]) ** 2 + (p[a + 2] - p[c + 2]) ** 2;
    const long = Math.max(ab, bc, ca);
    let r = Math.sqrt(long) / 2;
    if (2 * long < ab + bc + ca) { // acute: abc / (4 area), the area from Heron's formula in squares
      const area16 = 2 * (ab * bc + bc * ca + ca * ab) - (ab * ab + bc * bc + ca * ca);
      if (area16 > 0) r = Math.sqrt((ab * bc * ca) / area16);
    }
    if (r > reach) reach = r;
  }
  return Number.isFinite(reach) ? reach * 1.15 : 0;
}

const Y_AXIS = new THREE.Vector3(0, 1, 0);
const Z_AXIS = new THREE.Vector3(0, 0, 1);
const markerGeometry = new THREE.SphereGeometry(1, 12, 8);
const pinMaterial = new THREE.MeshStandardMaterial({ color: 0xff3355, emissive: 0x551020, roughness: 0.5 });
// Colliders are drawn a hair inside their true surface (colliderInset) and
// pushed back in depth, so that what rests on them is drawn in front.
const colliderMaterial = new THREE.MeshStandardMaterial({
  color: 0x8fa3ba, roughness: 0.55, metalness: 0.05, polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 2,
});
const planeMaterial = new THREE.MeshStandardMaterial({
  color: 0x6f8fae, roughness: 0.9, transparent: true, opacity: 0.14, side: THREE.DoubleSide, depthWrite: false,
  polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 2,
});

// How far inside its true surface a collider is drawn. Cloth resting on a
// sphere touches it at its particles only: between them its triangles are
// flat chords, which pass inside a sphere of radius r by up to
// r - sqrt(r² - ρ²), ρ the triangle's circumradius, so a sphere drawn at its
// true radius shows through the middle of every triangle in star-shaped
// patches. `reach` is the instance's ρ (InstanceView.reach); a curved
// collider is drawn smaller by that sag (at most a quarter of its radius),
// and every collider by a hair more, against depth-buffer ties where a
// surface lies flat on it (a cloth on a box's face or a floor plane).
let colliderInsetOn = true;  // the test hook turns it off to show what it prevents
function chordSag(r, reach) {
  if (!colliderInsetOn || !(r > 0)) return 0;
  const sag = reach < r ? r - Math.sqrt(r * r - reach * reach) : r;
  return Math.min(sag + Math.min(HAIR, 0.01 * r), 0.25 * r);
}
function flatInset(size) {
  return colliderInsetOn ? Math.min(HAIR, 0.01 * size) : 0;
}
const colliderWireMaterial = new THREE.LineBasicMaterial({ color: 0xffd166, transparent: true, opacity: 0.85 });

// A tapered capsule along +y (PROTOCOL.md, addCollider): the hull of a
// sphere of radius r1 at y = -L/2 and one of r2 at +L/2, L = height - r1 -
// r2, turned about y. Its profile: the r1 sphere from its pole up to where
// the cone's side touches it, the side, then the r2 sphere to its pole.
function taperedCapsuleGeometry(r1, r2, height) {
  r1 = Math.max(r1, 1e-4);
  r2 = Math.max(r2, 1e-4);
  const len = Math.max(height - r1 - r2, 0);
  if (len <= Math.abs(r1 - r2)) { // one sphere holds the other
    const big = new THREE.SphereGeometry(Math.max(r1, r2), 32, 16);
    return big.translate(0, r1 >= r2 ? -len / 2 : len / 2, 0);
  }
  const tangent = Math.asin((r1 - r2) / len); // the side's normal, above the horizontal
  const profile = [];
  const arc = (r, y, from, to, n) => {
    for (let k = 0; k <= n; k++) {
      const a = from + ((to - from) * k) / n;
      profile.push(new THREE.Vector2(Math.max(r * Math.cos(a), 0), y + r * Math.sin(a)));
    }
  };
  arc(r1, -len / 2, -Math.PI / 2, tangent, 12);
  arc(r2, len / 2, tangent, Math.PI / 2, 12);
  return new THREE.LatheGeometry(profile, 24);
}
const structuralMaterial = new THREE.LineBasicMaterial({ color: 0x7fe0ff, transparent: true, opacity: 0.9 });
const shearMaterial = new THREE.LineBasicMaterial({ color: 0xff9f5a, transparent: true, opacity: 0.35 });
const particleMaterial = new THREE.PointsMaterial({ color: 0xffffff, size: 3, sizeAttenuation: false });

class InstanceView {
  constructor(id) {
    this.id = id;
    this.group = new THREE.Group();
    this.group.name = `instance-${id}`;
    this.colliders = new THREE.Group();
    this.group.add(this.colliders);
    this.meta = null;
    this.count = -1;
    this.layout = '';
    this.collidersKey = '';
    this.markerRadius = 0.02;
    this.index = null;       // the surface's triangles
    this.reach = 0;          // their circumradius, for the colliders' inset (triangleReach)
    this.reachStale = false;
    this.frame = -1;
    this.time = 0;
    scene.add(this.group);
  }

  setMeta(meta) {
    this.meta = meta;
    const layout = `${meta.type}:${meta.width}x${meta.height}:${meta.topology}`;
    if (layout !== this.layout) {
      this.layout = layout;
      this.resetSurface();
    }
    this.#syncColliders();
    this.#buildPins();
  }

  // Builds the colliders' shapes when they (or the inset they are drawn
  // with) changed, and places them; moved colliders are only placed.
  #syncColliders() {
    const list = this.meta?.colliders ?? [];
    const key = JSON.stringify([this.reach, colliderInsetOn,
      list.map((c) => [c.collider, c.type, c.radius, c.height, c.radius2, c.halfExtents])]);
    if (key !== this.collidersKey) {
      this.collidersKey = key;
      this.#buildColliders(list);
    }
    this.#placeColliders(list);
  }

  // Drops the surface: it is made again, from the current metadata and
  // topology, with the next frame (the last one again if none is waiting).
  resetSurface() {
    this.#disposeSurface();
    this.count = -1;
    if (this.lastBuf && !state.incoming.has(this.id)) state.incoming.set(this.id, this.lastBuf);
  }

  // Whether the surface can be made: the metadata is here and, when clothd
  // has a topology for the instance, so are its triangles.
  ready() {
    return !!this.meta && (this.meta.topology !== 'ok' || state.topology.has(this.id));
  }

  // The triangles for `count` particles: clothd's topology when it has one
  // that fits, else (an older clothd) a cloth's grid built here, else none.
  #surfaceOf(count) {
    const m = this.meta;
    const t = state.topology.get(this.id);
    if (t && t.particles === count && t.maxIndex < count && t.triangles.length >= 3) {
      return { index: t.triangles, uvs: t.uvs, source: 'topology' };
    }
    if (m && m.type !== 'softbody' && m.width * m.height === count && m.width >= 2 && m.height >= 2) {
      return { index: gridIndex(m.width, m.height), uvs: gridUvs(m.width, m.height), source: 'grid' };
    }
    return null;
  }

  // Makes the surface for `count` particles: shaded triangles (a cloth
  // double-sided, a soft body's closed surface from outside), else a point
  // cloud; plus the debug overlay's lines.
  #buildSurface(count) {
    this.#disposeSurface();
    this.count = count;
    const m = this.meta;
    const soft = m?.type === 'softbody';
    const positions = new THREE.BufferAttribute(new Float32Array(3 * count), 3);
    positions.setUsage(THREE.DynamicDrawUsage);
    this.positions = positions;
    // Normals (the frame's, or computed from the triangles), each particle's
    // velocity when frames carry it, and the speed colours made from it.
    this.normalAttr = new THREE.BufferAttribute(new Float32Array(3 * count), 3);
    this.normalAttr.setUsage(THREE.DynamicDrawUsage);
    this.colourAttr = new THREE.BufferAttribute(new Float32Array(3 * count), 3);
    this.colourAttr.setUsage(THREE.DynamicDrawUsage);
    this.velocities = new Float32Array(3 * count);
    const colour = colourOf(this.id, m?.type);
    hook.colours[this.id] = hex(colour);
    const surface = this.#surfaceOf(count);
    this.lines = [];
    if (surface) {
      const geo = new THREE.BufferGeometry();
      geo.setAttribute('position', positions);
      geo.setAttribute('normal', this.normalAttr);
      geo.setAttribute('color', this.colourAttr);
      if (surface.uvs) geo.setAttribute('uv', new THREE.BufferAttribute(surface.uvs, 2));
      geo.setIndex(new THREE.BufferAttribute(surface.index, 1));
      this.material = new THREE.MeshStandardMaterial({
        color: colour, side: soft ? THREE.FrontSide : THREE.DoubleSide, roughness: soft ? 0.5 : 0.78, metalness: 0,
      });
      this.mesh = new THREE.Mesh(geo, this.material);
      this.mesh.castShadow = true;
      this.mesh.receiveShadow = true;
      this.mesh.userData.instance = this.id;
      this.mesh.frustumCulled = false;
      this.group.add(this.mesh);
      this.edge = surface.index.length >= 2 ? [surface.index[0], surface.index[1]] : null;
      this.index = surface.index;
      this.reachStale = true;

      // Debug lines: a cloth's constraints (structural, shear), or the edges
      // of a soft body's surface.
      const lineSets = [];
      if (!soft && m && m.width * m.height === count && m.width >= 2 && m.height >= 2) {
        const { structural, shear } = constraintIndex(m.width, m.height);
        lineSets.push([structural, structuralMaterial], [shear, shearMaterial]);
      } else {
        lineSets.push([edgeIndex(surface.index, count), structuralMaterial]);
      }
      for (const [index, material] of lineSets) {
        const lGeo = new THREE.BufferGeometry();
        lGeo.setAttribute('position', positions);
        lGeo.setIndex(new THREE.BufferAttribute(index, 1));
        const l = new THREE.LineSegments(lGeo, material);
        l.frustumCulled = false;
        this.group.add(l);
        this.lines.push(l);
      }
    }
    hook.meshes[this.id] = {
      type: m?.type ?? null,
      kind: surface ? 'mesh' : 'points',
      source: surface ? surface.source : null,
      triangles: surface ? surface.index.length / 3 : 0,
      particles: count,
    };
    const pGeo = new THREE.BufferGeometry();
    pGeo.setAttribute('position', positions);
    const surfaceless = !this.mesh;
    this.points = new THREE.Points(pGeo, surfaceless
      ? new THREE.PointsMaterial({ color: colour, size: 4, sizeAttenuation: false })
      : particleMaterial);
    this.points.frustumCulled = false;
    this.points.userData.alwaysVisible = surfaceless;
    this.group.add(this.points);
    this.#buildPins();
    this.applyDebug();
  }

  #disposeSurface() {
    for (const o of [this.mesh, this.points, ...(this.lines ?? [])]) {
      if (!o) continue;
      this.group.remove(o);
      o.geometry.dispose();
    }
    if (this.material) this.material.dispose();
    if (this.points && this.points.material !== particleMaterial) this.points.material.dispose();
    if (this.pins) {
      this.group.remove(this.pins);
      this.pins.dispose();
      this.pins = null;
    }
    this.mesh = null;
    this.points = null;
    this.lines = [];
    this.material = null;
    this.edge = null;
    this.index = null;
  }

  #buildPins() {
    if (this.pins) {
      this.group.remove(this.pins);
      this.pins.dispose();
      this.pins = null;
    }
    const pinned = (this.meta?.pinned ?? []).filter((i) => i < this.count);
    if (pinned.length === 0 || this.count < 0) return;
    this.pinned = pinned;
    this.pins = new THREE.InstancedMesh(markerGeometry, pinMaterial, pinned.length);
    this.pins.frustumCulled = false;
    this.pins.userData.instance = this.id;
    this.group.add(this.pins);
    this.#placePins();
  }

  #placePins() {
    if (!this.pins) return;
    const p = this.positions.array;
    const m = new THREE.Matrix4();
    const r = this.markerRadius;
    this.pinned.forEach((idx, k) => {
      m.makeScale(r, r, r);
      m.setPosition(p[3 * idx], p[3 * idx + 1], p[3 * idx + 2]);
      this.pins.setMatrixAt(k, m);
    });
    this.pins.instanceMatrix.needsUpdate = true;
  }

  #buildColliders(list) {
    for (const c of [...this.colliders.children]) {
      this.colliders.remove(c);
      // ArrowHelper's geometries are shared by every arrow: not ours to free.
      c.traverse((o) => { if (o.parent?.type !== 'ArrowHelper') o.geometry?.dispose(); });
    }
    for (const c of list) {
      // The shape drawn a little inside the true one (chordSag, flatInset);
      // the debug wireframe keeps the true shape.
      const reach = this.reach;
      let geo;
      let wireGeo = null;
      let mat = colliderMaterial;
      if (c.type === 'plane') {
        geo = new THREE.PlaneGeometry(20, 20).translate(0, 0, -flatInset(1));
        mat = planeMaterial;
      } else if (c.type === 'capsule' && c.height > 2 * c.radius) {
        const r = Math.max(c.radius, 1e-4);
        geo = new THREE.CapsuleGeometry(r - chordSag(r, reach), c.height - 2 * r, 8, 24);
        wireGeo = new THREE.CapsuleGeometry(r, c.height - 2 * r, 8, 24);
      } else if (c.type === 'taperedCapsule') {
        const r1 = c.radius;
        const r2 = c.radius2 ?? c.radius;
        const d1 = chordSag(r1, reach);
        const d2 = chordSag(r2, reach);
        geo = taperedCapsuleGeometry(r1 - d1, r2 - d2, c.height - d1 - d2);
        wireGeo = taperedCapsuleGeometry(r1, r2, c.height);
      } else if (c.type === 'box') {
        const [x, y, z] = c.halfExtents ?? [0.5, 0.5, 0.5];
        const d = flatInset(Math.min(x, y, z));
        geo = new THREE.BoxGeometry(2 * (x - d), 2 * (y - d), 2 * (z - d));
        wireGeo = new THREE.BoxGeometry(2 * x, 2 * y, 2 * z);
      } else {
        const r = Math.max(c.radius, 1e-4);
        geo = new THREE.SphereGeometry(r - chordSag(r, reach), 48, 24);
        wireGeo = new THREE.SphereGeometry(r, 32, 16);
      }
      const holder = new THREE.Group();
      const mesh = new THREE.Mesh(geo, mat);
      mesh.castShadow = c.type !== 'plane';
      mesh.receiveShadow = c.type !== 'plane';
      holder.add(mesh);
      if (c.type === 'plane') {
        // Debug: a coarse grid on the plane around its point, and its normal.
        const outline = new THREE.LineSegments(
          new THREE.WireframeGeometry(new THREE.PlaneGeometry(3, 3, 6, 6)), colliderWireMaterial);
        const arrow = new THREE.ArrowHelper(Z_AXIS, new THREE.Vector3(), 0.6, 0xffd166, 0.12, 0.06);
        outline.userData.debugOnly = arrow.userData.debugOnly = true;
        holder.add(outline, arrow);
      } else {
        const wire = new THREE.LineSegments(new THREE.WireframeGeometry(wireGeo), colliderWireMaterial);
        wireGeo.dispose();
        wire.userData.debugOnly = true;
        holder.add(wire);
      }
      holder.userData.collider = c.collider;
      holder.userData.type = c.type;
      this.colliders.add(holder);
    }
    this.applyDebug();
  }

  // Planes' geometry faces +z and capsules' axis is +y: turn them onto the
  // collider's normal; a box turns by its rotation.
  #placeColliders(list) {
    const n = new THREE.Vector3();
    list.forEach((c, i) => {
      const holder = this.colliders.children[i];
      if (!holder) return;
      holder.position.set(...c.position);
      n.set(...(c.normal ?? [0, 1, 0])).normalize();
      if (c.type === 'plane') holder.quaternion.setFromUnitVectors(Z_AXIS, n);
      else if (c.type === 'capsule' || c.type === 'taperedCapsule') holder.quaternion.setFromUnitVectors(Y_AXIS, n);
      else if (c.type === 'box' && c.rotation) holder.quaternion.set(...c.rotation);
    });
  }

  applyFrame(buf) {
    const h = decodeHeader(buf);
    if (h.count !== this.count) this.#buildSurface(h.count);
    const f = decodeFrame(buf, this.positions.array, { velocities: this.velocities, normals: this.normalAttr.array });
    this.positions.needsUpdate = true;
    if (this.mesh) {
      // clothd's normals are those of the same triangles, area-weighted,
      // on the side they wind counter-clockwise: what computeVertexNormals
      // would make, without making it.
      if (f.normals) this.normalAttr.needsUpdate = true;
      else this.mesh.geometry.computeVertexNormals();
      hook.normals[this.id] = f.normals ? 'frame' : 'computed';
    }
    this.hasVelocities = f.velocities !== null;
    if (f.velocities) {
      let lo = Infinity;
      let hi = 0;
      const v = f.velocities;
      const c = this.colourAttr.array;
      for (let i = 0; i < v.length; i += 3) {
        const s = Math.hypot(v[i], v[i + 1], v[i + 2]);
        lo = Math.min(lo, s);
        hi = Math.max(hi, s);
        speedColour(s, c, i);
      }
      this.colourAttr.needsUpdate = true;
      hook.speeds[this.id] = [lo === Infinity ? 0 : lo, hi];
    }
    this.applyColours();
    if (this.frame < 0 && this.count >= 2) {
      // Marker size from the length of an edge (the first two particles
      // without triangles).
      const p = this.positions.array;
      const [a, b] = this.edge ?? [0, 1];
      const d = Math.hypot(p[3 * b] - p[3 * a], p[3 * b + 1] - p[3 * a + 1], p[3 * b + 2] - p[3 * a + 2]);
      this.markerRadius = Math.min(Math.max(d * 0.28, 0.004), 0.08) || 0.02;
    }
    if (this.reachStale) {
      // The colliders' inset follows the triangles (chordSag).
      this.reachStale = false;
      this.reach = triangleReach(this.positions.array, this.index);
      this.#syncColliders();
    }
    this.#placePins();
    this.frame = h.frame;
    this.time = h.time;
    this.lastBuf = buf;
  }

  // The instance's own colour, or each particle's speed when asked for and
  // the frames carry velocities.
  applyColours() {
    if (!this.material) return;
    const bySpeed = state.speedColours && this.hasVelocities === true;
    if (this.material.vertexColors === bySpeed) return;
    this.material.vertexColors = bySpeed;
    this.material.color.set(bySpeed ? 0xffffff : colourOf(this.id, this.meta?.type));
    this.material.needsUpdate = true;
  }

  applyDebug() {
    const on = state.debug;
    if (this.material) {
      this.material.transparent = on;
      this.material.opacity = on ? 0.28 : 1;
      this.material.depthWrite = !on;
      this.material.needsUpdate = true;
    }
    for (const l of this.lines ?? []) l.visible = on;
    if (this.points && !this.points.userData.alwaysVisible) this.points.visible = on;
    this.colliders.traverse((o) => {
      if (o.userData.debugOnly) o.visible = on;
    });
  }

  bounds() {
    const box = new THREE.Box3();
    if (this.positions && this.count > 0) box.setFromBufferAttribute(this.positions);
    this.group.updateMatrixWorld(true);
    for (const c of this.colliders.children) {
      if (c.userData.type !== 'plane') box.expandByObject(c.children[0]);
    }
    return box;
  }

  dispose() {
    this.#disposeSurface();
    this.#buildColliders([]);
    scene.remove(this.group);
    delete hook.meshes[this.id];
    delete hook.colours[this.id];
  }
}

// ---- camera framing --------------------------------------------------------

let flight = null; // {from, to, fromTarget, toTarget, t0}

function frameBox(box) {
  if (box.isEmpty()) return;
  const sphere = box.getBoundingSphere(new THREE.Sphere());
  const r = Math.max(sphere.radius, 0.05);
  const fov = THREE.MathUtils.degToRad(camera.fov);
  const fit = Math.min(fov, 2 * Math.atan(Math.tan(fov / 2) * camera.aspect));
  const dist = (r / Math.sin(fit / 2)) * 1.15;
  const dir = camera.position.clone().sub(controls.target);
  if (dir.lengthSq() < 1e-8) dir.set(0.5, 0.4, 1);
  dir.normalize();
  flight = {
    fromPos: camera.position.clone(),
    toPos: sphere.center.clone().addScaledVector(dir, dist),
    fromTarget: controls.target.clone(),
    toTarget: sphere.center.clone(),
    t0: performance.now(),
  };
  camera.near = Math.max(dist / 1000, 0.001);
  camera.far = Math.max(dist * 100, 100);
  camera.updateProjectionMatrix();
  markDirty();
}

// The sun's shadow box: around every instance and collider (planes aside)
// and where their shadows fall on the ground, seen from the sun, so that
// the 1024² map spends its texels on the scene. Refitted when the list of
// instances changes and once a second (their bounds cost a pass over the
// positions, too much for every frame of a big scene).
const shadowBox = new THREE.Box3();
const shadowSphere = new THREE.Sphere();
function fitShadow() {
  if (!sun.castShadow) return;
  shadowBox.makeEmpty();
  for (const v of state.views.values()) if (v.group.visible) shadowBox.union(v.bounds());
  if (shadowBox.isEmpty()) return;
  const lo = shadowBox.min;
  const hi = shadowBox.max;
  const p = new THREE.Vector3();
  for (const x of [lo.x, hi.x]) {
    for (const z of [lo.z, hi.z]) {
      // The top corners' shadows on the ground (y = 0), when above it.
      if (hi.y > 0) shadowBox.expandByPoint(p.set(x, hi.y, z).addScaledVector(SUN_DIR, -hi.y / SUN_DIR.y).setY(0));
    }
  }
  shadowBox.getBoundingSphere(shadowSphere);
  const r = Math.max(shadowSphere.radius, 0.1) * 1.05;
  sun.target.position.copy(shadowSphere.center);
  sun.position.copy(shadowSphere.center).addScaledVector(SUN_DIR, r + 1);
  const cam = sun.shadow.camera;
  cam.left = cam.bottom = -r;
  cam.right = cam.top = r;
  cam.near = 0.05;
  cam.far = 2 * r + 2;
  cam.updateProjectionMatrix();
  sun.shadow.normalBias = r / 256; // about a texel of the map, against a cloth shadowing itself
  sun.target.updateMatrixWorld();
  markDirty();
}

function setShadows(on) {
  state.shadows = hook.shadows = !!on;
  $('shadow-toggle').checked = state.shadows;
  sun.castShadow = state.shadows;
  ground.visible = state.shadows;
  fitShadow();
  markDirty();
}

function frameAll() {
  const box = new THREE.Box3();
  for (const v of state.views.values()) box.union(v.bounds());
  frameBox(box);
}

function frameSelected() {
  const v = state.views.get(state.selected);
  if (v) frameBox(v.bounds());
  else frameAll();
}

function stepFlight(now) {
  if (!flight) return;
  const t = Math.min((now - flight.t0) / 350, 1);
  const e = t * t * (3 - 2 * t);
  camera.position.lerpVectors(flight.fromPos, flight.toPos, e);
  controls.target.lerpVectors(flight.fromTarget, flight.toTarget, e);
  if (t >= 1) flight = null;
  markDirty();
}

// ---- selection ------------------------------------------------------------

function select(id, { frame = true } = {}) {
  state.selected = id !== null && state.meta.has(id) ? id : null;
  hook.selected = state.selected;
  $('wind-scope-selected').disabled = state.selected === null;
  if (state.selected === null && windScope() === 'selected') {
    document.querySelector('input[name="wind-scope"][value="global"]').checked = true;
  }
  // Selected in a folded scene (a click in the view): the scene unfolds.
  const scene = state.meta.get(state.selected)?.scene ?? null;
  if (scene !== null && collapsedScenes.has(scene)) setSceneCollapsed(scene, false);
  for (const li of $('instances').querySelectorAll('li[data-instance]')) {
    const on = Number(li.dataset.instance) === state.selected;
    li.classList.toggle('selected', on);
    li.setAttribute('aria-selected', String(on));
  }
  if (frame && state.selected !== null) frameSelected();
  sim.update(); // "Reset #id" or "Reset all"
  energyPlot.select(state.selected);
  showWind();
  renderSelection();
  markDirty();
}

const raycaster = new THREE.Raycaster();
let downAt = null;
canvas.addEventListener('pointerdown', (e) => { downAt = [e.clientX, e.clientY]; });
canvas.addEventListener('pointerup', (e) => {
  if (!downAt || e.button !== 0) return;
  const moved = Math.hypot(e.clientX - downAt[0], e.clientY - downAt[1]);
  downAt = null;
  if (moved > 4) return;
  const r = canvas.getBoundingClientRect();
  const ndc = new THREE.Vector2(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1);
  raycaster.setFromCamera(ndc, camera);
  const targets = [];
  for (const v of state.views.values()) {
    if (v.mesh) {
      v.mesh.geometry.computeBoundingSphere();
      targets.push(v.mesh);
    }
  }
  const hit = raycaster.intersectObjects(targets, false)[0];
  select(hit ? hit.object.userData.instance : null, { frame: false });
});

// ---- WebSocket to the viewer server -------------------------------------------

let ws = null;

function connect() {
  ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => {
    state.wsOpen = hook.wsOpen = true;
    showConnection();
  };
  ws.onclose = () => {
    state.wsOpen = hook.wsOpen = false;
    state.connected = hook.connected = false;
    showConnection();
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data === 'string') onJson(JSON.parse(ev.data));
    else onFrame(ev.data);
  };
}

function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
  else showError('viewer server: not connected');
}

function onFrame(buf) {
  let h;
  try {
    h = decodeHeader(buf);
  } catch (err) {
    hook.decodeErrors++;
    console.warn(err.message);
    return;
  }
  const now = performance.now();
  state.incoming.set(h.instance, buf);
  state.lastFrame.set(h.instance, { frame: h.frame, time: h.time, t: now });
  let a = state.arrivals.get(h.instance);
  if (!a) state.arrivals.set(h.instance, (a = []));
  a.push({ t: now, frame: h.frame });
  while (a.length > 2 && now - a[0].t > STATS_WINDOW_MS) a.shift();
  hook.frames[h.instance] = h.frame;
  markDirty();
}

function onJson(msg) {
  switch (msg.type) {
    case 'hello':
      state.clothd = msg.clothd;
      state.quantize = msg.quantize;
      setChannels(msg.channels ?? []);
      setAccess(msg.access ?? null, msg.authError ?? null);
      setConnected(msg.connected, msg);
      setDebug(msg.debug);
      setGlobalWind(msg.globalWind);
      sim.onMessage(msg.sim);
      plot.setSamples(msg.stepTimes?.samples, msg.stepTimes?.available);
      energyPlot.setState(msg.energy);
      syncInstances(msg.instances ?? [], msg.scenes);
      timeline.onMessage(msg.timeline);
      timeline.relist();
      break;
    case 'connection':
      setAccess(msg.access ?? null, msg.authError ?? null);
      setConnected(msg.connected, msg);
      if (msg.connected) timeline.relist();
      else energyPlot.forget();
      break;
    case 'timeline':
    case 'journals':
      timeline.onMessage(msg);
      break;
    case 'instances':
      syncInstances(msg.instances, msg.scenes);
      break;
    case 'sim':
      sim.onMessage(msg);
      buildRows(); // the paused flags
      renderSelection();
      break;
    case 'steptime':
      plot.onMessage(msg);
      break;
    case 'energy':
      energyPlot.onMessage(msg);
      break;
    case 'topology':
      setTopology(msg);
      break;
    case 'debug':
      setDebug(msg.enabled);
      break;
    case 'wind':
      setGlobalWind(msg.globalWind);
      break;
    case 'error':
      showError(msg.message);
      break;
    default:
      break;
  }
}

// ---- timeline (timeline.js): a journal replayed to any frame -----------------

// Instances the timeline hides: the recorded originals of the replay shown;
// each replayed instance is drawn in its original's colour (aliases: id ->
// recorded id), so that playing does not flicker through the palette.
let hiddenIds = new Set();
let colourAliases = new Map();
function setHidden(ids, aliases = new Map()) {
  hiddenIds = ids;
  colourAliases = aliases;
  for (const [id, v] of state.views) v.group.visible = !ids.has(id);
  markDirty();
}
const timeline = createTimeline({ send, hook, setHidden });

// ---- the simulation's toolbar (sim.js), the step-time and energy plots -------

const sim = createSim({ send, hook, selected: () => state.selected, showError });
const plot = createPlot({ hook });
$('plot-toggle').addEventListener('change', (e) => plot.setVisible(e.target.checked));
const energyPlot = createEnergyPlot({ hook, colourOf: (id) => hex(colourOf(id, state.meta.get(id)?.type)) });
$('energy-toggle').addEventListener('change', (e) => energyPlot.setVisible(e.target.checked));

function setConnected(on, info = {}) {
  state.connected = hook.connected = !!on;
  if (info.version) state.version = info.version;
  showConnection();
}

function setChannels(channels) {
  state.channels = hook.channels = channels.slice();
  const can = channels.includes('velocities');
  $('speed-toggle').disabled = !can;
  $('speed-label').title = can
    ? `Blue at rest to red at ${SPEED_MAX} m/s and over: each particle's velocity from the frames.`
    : 'Needs velocities in the frames: start the viewer with --channels velocities.';
  // Said in the panel only when it is off, in one line; the tooltip has the rest.
  $('speed-note').textContent = 'needs the viewer\'s --channels velocities';
  $('speed-note').hidden = can;
  if (!can) setSpeedColours(false);
}

function setSpeedColours(on) {
  state.speedColours = hook.speedColours = !!on && state.channels.includes('velocities');
  $('speed-toggle').checked = state.speedColours;
  for (const v of state.views.values()) v.applyColours();
  markDirty();
}

function setDebug(on) {
  state.debug = hook.debug = !!on;
  $('debug-toggle').checked = state.debug;
  $('badge-debug').hidden = !state.debug;
  axes.visible = state.debug;
  for (const v of state.views.values()) v.applyDebug();
  markDirty();
}

function setGlobalWind(w) {
  if (!Array.isArray(w)) return;
  state.globalWind = hook.globalWind = w.map(Number);
  if (windScope() === 'global') showWind();
}

function syncInstances(list, scenes) {
  hook.instances = list;
  state.scenes = Array.isArray(scenes) ? scenes : null;
  const seen = new Set();
  for (const m of list) {
    seen.add(m.instance);
    state.meta.set(m.instance, m);
    let v = state.views.get(m.instance);
    if (!v) state.views.set(m.instance, (v = new InstanceView(m.instance)));
    v.group.visible = !hiddenIds.has(m.instance);
    v.setMeta(m);
  }
  for (const id of [...state.meta.keys()]) {
    if (seen.has(id)) continue;
    state.meta.delete(id);
    state.views.get(id)?.dispose();
    state.views.delete(id);
    state.topology.delete(id);
    delete hook.topology[id];
    state.incoming.delete(id);
    state.arrivals.delete(id);
    state.lastFrame.delete(id);
    delete hook.frames[id];
    delete hook.rendered[id];
  }
  buildRows();
  if (state.selected !== null && !state.meta.has(state.selected)) select(null);
  renderSelection();
  showWind(); // the selected instance's own wind and the unit may have changed
  sim.update();
  fitShadow();
  markDirty();
}

// ---- panel ----------------------------------------------------------------

// The panel's sections remember being folded, in this browser.
for (const d of document.querySelectorAll('details.sec')) {
  const key = `clothd-viewer:${d.id}`;
  try {
    if (localStorage.getItem(key) === 'closed') d.open = false;
    d.addEventListener('toggle', () => localStorage.setItem(key, d.open ? 'open' : 'closed'));
  } catch {
    // No storage (a sandboxed page): folding still works, it is not kept.
  }
}

function showConnection() {
  const el = $('conn');
  let s;
  let text;
  if (!state.wsOpen) {
    s = 'offline';
    text = 'viewer server offline — retrying';
  } else if (!state.connected && state.authError) {
    s = 'unauthorized';
    text = `clothd ${state.clothd} refused the viewer's token (${state.authError}) — retrying`;
  } else if (!state.connected) {
    s = 'disconnected';
    text = `disconnected from clothd ${state.clothd} — retrying`;
  } else {
    s = 'connected';
    text = `connected to clothd ${state.version ?? ''} at ${state.clothd}${state.quantize ? ' · quantized' : ''}`
      + (state.access === 'readonly' ? ' · read-only' : '');
  }
  el.dataset.state = s;
  el.title = s === 'connected' && state.access === 'readonly' ? READONLY_TIP : 'clothd connection';
  $('conn-text').textContent = text;
  const banner = $('disconnected');
  banner.hidden = s === 'connected';
  banner.textContent = s === 'offline' ? 'Viewer server offline — retrying…'
    : s === 'unauthorized' ? `clothd ${state.clothd} refused the viewer's token: ${state.authError} — retrying…`
      : `Disconnected from clothd ${state.clothd} — retrying…`;
}

// ---- read-only token: the controls that change the simulation --------------

const READONLY_TIP = 'The viewer holds a read-only token: it shows the simulation but cannot change it';
// Inputs and buttons that send commands to clothd, and the labels and rows
// around them (a disabled input shows no tooltip in every browser).
const WRITE_CONTROLS = ['wind-x', 'wind-y', 'wind-z', 'wind-x-range', 'wind-y-range', 'wind-z-range', 'wind-zero', 'debug-toggle'];
const WRITE_WRAPPERS = ['wind-axes', 'debug-label'];

function readOnly() {
  return state.access === 'readonly';
}

function setAccess(access, authError) {
  state.access = hook.access = access;
  state.authError = hook.authError = authError;
  const ro = readOnly();
  for (const id of WRITE_CONTROLS) {
    const el = $(id);
    el.disabled = ro;
    if (ro) el.title = READONLY_TIP;
    else el.removeAttribute('title');
  }
  for (const id of WRITE_WRAPPERS) {
    const el = $(id);
    if (ro) el.title = READONLY_TIP;
    else el.removeAttribute('title');
  }
  $('readonly-note').hidden = !ro;
  sim.setReadOnly(ro, READONLY_TIP);
  document.body.dataset.access = access ?? 'none';
}

let errorTimer = null;
function showError(text) {
  const el = $('error');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { el.hidden = true; }, 5000);
}

// One row of the instance list (reused from one build to the next).
function instanceRow(id, existing) {
  const m = state.meta.get(id);
  let li = existing.get(id);
  if (!li) {
    li = document.createElement('li');
    li.dataset.instance = String(id);
    li.setAttribute('role', 'option');
    li.innerHTML = '<span class="name"><span class="swatch"></span><span class="label"></span>'
      + '<span class="size"></span><span class="flag" hidden></span></span>'
      + '<span class="num frame">–</span><span class="num step">–</span><span class="num fps">–</span>';
    li.addEventListener('click', () => select(id));
  }
  // An ephemeral instance (destroyed when the connection that holds it, or
  // its scene, closes) has a hollow swatch: a mark that takes no width.
  const colour = hex(colourOf(id, m.type));
  const swatch = li.querySelector('.swatch');
  swatch.style.background = m.ephemeral ? 'transparent' : colour;
  swatch.style.boxShadow = m.ephemeral ? `inset 0 0 0 2px ${colour}` : '';
  li.classList.toggle('ephemeral', !!m.ephemeral);
  li.querySelector('.label').textContent = `#${id}`;
  const soft = m.type === 'softbody';
  // A mesh cloth reports its vertex count as width and 1 as height.
  const grid = m.width && m.height > 1;
  li.querySelector('.size').textContent = soft ? `soft ${m.particles}` : grid ? `${m.width}×${m.height}` : `mesh ${m.particles}`;
  li.title = (soft ? `soft body, ${m.particles} particles` : `cloth, ${m.width} × ${m.height} particles`)
    + (m.ephemeral ? `; ephemeral: ${EPHEMERAL_TIP}` : '');
  const flag = li.querySelector('.flag');
  const paused = isPaused(m);
  flag.hidden = m.enabled !== false && !m.sleeping;
  flag.textContent = m.unstable ? 'unstable' : paused ? 'paused' : m.enabled === false ? 'disabled' : 'sleeping';
  flag.classList.toggle('unstable', !!m.unstable);
  flag.classList.toggle('paused', paused);
  flag.classList.toggle('sleeping', m.enabled !== false && !!m.sleeping);
  li.classList.toggle('selected', id === state.selected);
  li.setAttribute('aria-selected', String(id === state.selected));
  return li;
}

const EPHEMERAL_TIP = 'destroyed when the connection that holds it closes';
const DEFAULT_SCENE = 'default';

// Scenes folded in the list, by name, kept in this browser as the sections are.
const COLLAPSED_KEY = 'clothd-viewer:collapsed-scenes';
const collapsedScenes = new Set();
try {
  const saved = JSON.parse(localStorage.getItem(COLLAPSED_KEY) ?? '[]');
  if (Array.isArray(saved)) for (const n of saved) if (typeof n === 'string') collapsedScenes.add(n);
} catch {
  // No storage, or not ours: nothing folded.
}
function setSceneCollapsed(name, on) {
  if (on) collapsedScenes.add(name);
  else collapsedScenes.delete(name);
  try {
    localStorage.setItem(COLLAPSED_KEY, JSON.stringify([...collapsedScenes]));
  } catch {
    // Not kept; folding still works.
  }
  buildRows();
}

// The instance list's groups: one per scene, "default" first and the others
// by name, each with its instances in slot order; a scene that a connection
// holds with no instance yet is listed empty. Null when clothd has no
// scenes (an older clothd): the list is flat.
function sceneGroups(ids) {
  const known = state.scenes;
  if (!known && ids.every((id) => !state.meta.get(id).scene)) return null;
  const groups = new Map();
  const group = (name) => {
    if (!groups.has(name)) groups.set(name, { scene: name, ephemeral: false, ids: [] });
    return groups.get(name);
  };
  for (const c of known ?? []) group(c.scene).ephemeral = !!c.ephemeral;
  for (const id of ids) group(state.meta.get(id).scene ?? DEFAULT_SCENE).ids.push(id);
  const byName = (a, b) => (a.scene === DEFAULT_SCENE ? -1 : b.scene === DEFAULT_SCENE ? 1 : a.scene < b.scene ? -1 : a.scene > b.scene ? 1 : 0);
  return [...groups.values()].sort(byName);
}

function sceneHeader(g) {
  const head = document.createElement('div');
  head.className = 'scene-head';
  head.tabIndex = 0;
  head.setAttribute('role', 'button');
  const open = !collapsedScenes.has(g.scene);
  head.setAttribute('aria-expanded', String(open));
  head.innerHTML = '<span class="scene-name"></span><span class="scene-flag" hidden>ephemeral</span><span class="count"></span>';
  head.querySelector('.scene-name').textContent = g.scene;
  head.querySelector('.scene-flag').hidden = !g.ephemeral;
  head.querySelector('.count').textContent = String(g.ids.length);
  head.title = `scene "${g.scene}": ${g.ids.length} instance${g.ids.length === 1 ? '' : 's'}`
    + (g.ephemeral ? `; held by a connection: every instance of it is ${EPHEMERAL_TIP}` : '')
    + ` (click to ${open ? 'fold' : 'unfold'})`;
  const toggle = () => setSceneCollapsed(g.scene, open);
  head.addEventListener('click', toggle);
  head.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' && e.key !== ' ') return;
    e.preventDefault();
    e.stopPropagation();
    toggle();
  });
  return head;
}

function buildRows() {
  const ul = $('instances');
  const ids = [...state.meta.keys()].sort((a, b) => (a & 0xffff) - (b & 0xffff) || a - b);
  const existing = new Map([...ul.querySelectorAll('li[data-instance]')].map((li) => [Number(li.dataset.instance), li]));
  const focused = document.activeElement?.closest?.('#instances .scene')?.dataset.scene;
  ul.replaceChildren();
  const groups = sceneGroups(ids);
  hook.scenes = groups?.map((g) => ({ scene: g.scene, ephemeral: g.ephemeral, collapsed: collapsedScenes.has(g.scene), instances: g.ids })) ?? null;
  if (groups === null) {
    for (const id of ids) ul.appendChild(instanceRow(id, existing));
  } else {
    for (const g of groups) {
      const li = document.createElement('li');
      li.className = 'scene';
      li.dataset.scene = g.scene;
      li.setAttribute('role', 'group');
      li.setAttribute('aria-label', `scene ${g.scene}`);
      li.classList.toggle('collapsed', collapsedScenes.has(g.scene));
      li.classList.toggle('held', g.ephemeral);
      const head = sceneHeader(g);
      const rows = document.createElement('ul');
      rows.className = 'scene-rows';
      rows.setAttribute('role', 'presentation');
      rows.hidden = collapsedScenes.has(g.scene);
      for (const id of g.ids) rows.appendChild(instanceRow(id, existing));
      li.append(head, rows);
      ul.appendChild(li);
      if (g.scene === focused) head.focus();
    }
  }
  $('instance-count').textContent = String(ids.length);
  $('no-instances').hidden = ids.length > 0;
}

// Frames per second and the observed time per step over the last second.
function statsOf(id, now) {
  const a = state.arrivals.get(id);
  if (!a || a.length === 0) return null;
  const last = a[a.length - 1];
  if (now - last.t > IDLE_MS) return { idle: true };
  if (a.length < 2) return null;
  const first = a[0];
  const span = last.t - first.t;
  const steps = last.frame - first.frame;
  if (span <= 0) return null;
  return { fps: ((a.length - 1) * 1000) / span, stepMs: steps > 0 ? span / steps : null };
}

function updateRows() {
  const now = performance.now();
  for (const li of $('instances').querySelectorAll('li[data-instance]')) {
    const id = Number(li.dataset.instance);
    const lf = state.lastFrame.get(id);
    const s = statsOf(id, now);
    li.querySelector('.frame').textContent = lf ? String(lf.frame) : '–';
    li.querySelector('.step').textContent = s && !s.idle && s.stepMs !== null ? s.stepMs.toFixed(1) : '–';
    li.querySelector('.fps').textContent = s && !s.idle ? s.fps.toFixed(0) : '–';
    li.classList.toggle('idle', !s || !!s.idle);
  }
  renderSelection();
  renderHud();
}

function fmt3(v) {
  return v ? `[${v.map((x) => Number(x).toFixed(2)).join(', ')}]` : '–';
}

// clothd's wind models: "aero" (the default; a clothd that does not say has
// it too) takes the wind as the air's velocity, "constant" as an acceleration.
function windUnitOf(model) {
  return model === 'constant' ? 'm/s²' : 'm/s';
}

// Disabled by this viewer's Pause (the relay's sim state says which).
function isPaused(m) {
  return m.enabled === false && !m.unstable && sim.pausedIds().includes(m.instance);
}

function stateOf(m) {
  if (m.unstable) return 'unstable (disabled)';
  if (isPaused(m)) return 'paused by the viewer';
  if (m.enabled === false) return 'disabled';
  return m.sleeping ? 'sleeping (no frames until something wakes it)' : 'enabled';
}

function renderSelection() {
  const dl = $('selection');
  const m = state.meta.get(state.selected);
  $('no-selection').hidden = !!m;
  if (!m) {
    dl.replaceChildren();
    return;
  }
  const lf = state.lastFrame.get(m.instance);
  const s = statsOf(m.instance, performance.now());
  const soft = m.type === 'softbody';
  const unit = windUnitOf(m.windModel);
  // One line a row where it fits (the panel keeps the Display section in
  // view: the list scrolls in place past its height).
  const resetPoint = hook.sim?.reset?.points?.[m.instance];
  const rows = [
    ['instance', `${m.instance} (${soft ? 'soft body' : m.type ?? 'cloth'})`],
    ...(m.scene ? [['scene', m.ephemeral ? `${m.scene} · ephemeral` : m.scene, m.ephemeral ? `ephemeral: ${EPHEMERAL_TIP}` : '']] : []),
    soft
      ? ['mesh', `${m.particles} particles, ${m.triangles ?? '?'} surface triangles`]
      : ['grid', `${m.width} × ${m.height} = ${m.particles} particles`],
    ['constraints', `${m.constraints ?? '–'}, ${m.pinned?.length ? `${m.pinned.length} pinned` : 'none pinned'}`],
    ['state', stateOf(m)],
    ['frame', lf ? `${lf.frame} · ${lf.time.toFixed(3)} s` : '–'],
    ['step', s && !s.idle && s.stepMs !== null ? `${s.stepMs.toFixed(2)} ms · ${s.fps.toFixed(0)} fps (observed)` : 'idle'],
    ['wind model', m.windModel === 'constant' ? 'constant: an acceleration, m/s²' : `${m.windModel ?? 'aero'}: the air's velocity, m/s`],
    ['wind', m.wind && m.wind.some((v) => Number(v) !== 0) ? `${fmt3(m.wind)} ${unit} (own) + global` : 'global only'],
    ['gravity', m.gravity ? `${fmt3(m.gravity)} m/s²` : '–'],
    ['reset', resetPoint !== undefined ? `to frame ${resetPoint ?? '?'} (first seen)` : 'no reset point'],
  ];
  for (const c of m.colliders ?? []) {
    const r = (v) => Number(v ?? 0).toFixed(2);
    const extra = c.type === 'plane' ? `n ${fmt3(c.normal)}`
      : c.type === 'box' ? `half ${fmt3(c.halfExtents)}`
        : c.type === 'capsule' ? `r ${r(c.radius)} h ${r(c.height)}`
          : c.type === 'taperedCapsule' ? `r ${r(c.radius)}–${r(c.radius2)} h ${r(c.height)}` : `r ${r(c.radius)}`;
    rows.push([`collider ${c.collider}`, `${c.type} ${extra} at ${fmt3(c.position)}`]);
  }
  const frag = document.createDocumentFragment();
  for (const [k, v, tip] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    if (tip) dd.title = tip;
    frag.append(dt, dd);
  }
  dl.replaceChildren(frag);
}

function renderHud() {
  const parts = [];
  const m = state.meta.get(state.selected);
  if (m) {
    const lf = state.lastFrame.get(m.instance);
    parts.push(`#${m.instance}  frame ${lf ? lf.frame : '–'}  t ${lf ? lf.time.toFixed(2) : '–'} s`);
  }
  parts.push(`${state.meta.size} instance${state.meta.size === 1 ? '' : 's'}`);
  $('hud').textContent = parts.join('   ·   ');
}

// ---- controls: wind, debug, display ------------------------------------------

const AXES = ['x', 'y', 'z'];

function windScope() {
  return document.querySelector('input[name="wind-scope"]:checked').value;
}

// The wind model the sliders speak to: the selected instance's, or, for the
// global wind, "aero" unless every instance uses "constant".
function windModelNow() {
  if (windScope() === 'selected') return state.meta.get(state.selected)?.windModel === 'constant' ? 'constant' : 'aero';
  const all = [...state.meta.values()];
  return all.length > 0 && all.every((m) => m.windModel === 'constant') ? 'constant' : 'aero';
}

function showWindUnit() {
  const model = windModelNow();
  const el = $('wind-unit');
  el.textContent = model === 'constant' ? 'm/s² · acceleration' : 'm/s · air velocity';
  el.dataset.model = model;
  el.title = model === 'constant'
    ? 'windModel "constant": the wind is an acceleration of every free particle (m/s²)'
    : 'windModel "aero" (or "dragLift"): the wind is the velocity of the air (m/s), acting on every triangle';
}

let windEditing = 0; // ms timestamp of the last local edit; server echoes don't fight the user
function showWind() {
  showWindUnit();
  if (performance.now() - windEditing < 500) return;
  let w = state.globalWind;
  if (windScope() === 'selected') w = state.meta.get(state.selected)?.wind ?? [0, 0, 0];
  AXES.forEach((a, i) => {
    const v = Number(w[i]) || 0;
    $(`wind-${a}`).value = String(Math.round(v * 1000) / 1000);
    $(`wind-${a}-range`).value = String(v);
  });
  const constant = [...state.meta.values()].filter((m) => m.windModel === 'constant').length;
  $('wind-note').textContent = windScope() === 'selected'
    ? `instance ${state.selected} only (added to the global wind)`
    : constant > 0 && constant < state.meta.size
      ? `every instance (${constant} with the constant model read it as m/s²)` : 'every instance';
}

function currentWind() {
  return AXES.map((a) => {
    const v = Number($(`wind-${a}`).value);
    return Number.isFinite(v) ? v : 0;
  });
}

let windTimer = null;
function sendWind() {
  windTimer = null;
  const msg = { type: 'wind', wind: currentWind() };
  if (windScope() === 'selected' && state.selected !== null) msg.instance = state.selected;
  send(msg);
}
function scheduleWind(immediate) {
  windEditing = performance.now();
  if (immediate) {
    clearTimeout(windTimer);
    sendWind();
  } else if (!windTimer) {
    windTimer = setTimeout(sendWind, 80);
  }
}

for (const a of AXES) {
  const range = $(`wind-${a}-range`);
  const num = $(`wind-${a}`);
  range.addEventListener('input', () => {
    num.value = range.value;
    scheduleWind(false);
  });
  range.addEventListener('change', () => scheduleWind(true));
  num.addEventListener('input', () => {
    if (num.value !== '' && Number.isFinite(Number(num.value))) range.value = num.value;
  });
  num.addEventListener('change', () => {
    range.value = num.value;
    scheduleWind(true);
  });
}
$('wind-zero').addEventListener('click', () => {
  for (const a of AXES) {
    $(`wind-${a}`).value = '0';
    $(`wind-${a}-range`).value = '0';
  }
  scheduleWind(true);
});
for (const r of document.querySelectorAll('input[name="wind-scope"]')) {
  r.addEventListener('change', () => {
    windEditing = 0;
    showWind();
  });
}

$('debug-toggle').addEventListener('change', (e) => {
  const want = e.target.checked;
  e.target.checked = state.debug; // shows clothd's flag; flips when clothd confirms
  send({ type: 'debug', enabled: want });
});
$('speed-toggle').addEventListener('change', (e) => setSpeedColours(e.target.checked));
$('shadow-toggle').addEventListener('change', (e) => setShadows(e.target.checked));
$('grid-toggle').addEventListener('change', (e) => {
  grid.visible = e.target.checked;
  markDirty();
});
$('frame-selected').addEventListener('click', frameSelected);
$('frame-all').addEventListener('click', frameAll);

window.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement && e.target.type !== 'checkbox' && e.target.type !== 'radio') return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  // Space: the timeline's play / pause while a journal is open; a focused
  // button, check box or section title takes it for itself (it clicks).
  if (e.key === ' ' && (hook.timeline?.open || e.target instanceof HTMLButtonElement
    || e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.target.tagName === 'SUMMARY')) return;
  if (sim.key(e)) {
    e.preventDefault();
    return;
  }
  const k = e.key.toLowerCase();
  if (k === 'f') frameSelected();
  else if (k === 'a') frameAll();
  else if (k === 'd') {
    if (readOnly()) showError(READONLY_TIP);
    else send({ type: 'debug', enabled: !state.debug });
  }
  else if (k === 'v') setSpeedColours(!state.speedColours);
  else if (k === 'escape') select(null);
  else return;
  e.preventDefault();
});

// ---- render loop -------------------------------------------------------------

// What a render costs is seen in the time until the browser gives the next
// frame (render() only queues the GPU's work). Where that is long (software
// GL, no GPU: over 40 ms, where a GPU gives the next frame at the display's
// 16.7 ms), the page draws at most once per twice that time, so that the
// GPU process keeps half of its time for the page's own frames and input.
const SLOW_FRAME_MS = 40;
let lastRenderAt = 0;
let renderCost = 0;
let timing = false;
function loop(now) {
  requestAnimationFrame(loop);
  if (timing) {
    // Over a second is no render: a hidden tab's frames stop.
    if (now - lastRenderAt < 1000) renderCost = now - lastRenderAt;
    hook.renderMs = renderCost;
    timing = false;
  }
  // Newest frame per instance only: frames that arrived in between are skipped.
  let applied = false;
  for (const [id, buf] of state.incoming) {
    const v = state.views.get(id);
    if (!v || !v.ready()) continue; // metadata or topology not here yet; the server is fetching them
    state.incoming.delete(id);
    try {
      v.applyFrame(buf);
      applied = true;
    } catch (err) {
      hook.decodeErrors++;
      console.warn(err.message);
    }
  }
  if (applied && !state.framedOnce) {
    state.framedOnce = true;
    frameAll();
    fitShadow();
  }
  stepFlight(now);
  if (controls.update()) dirty = true;
  if (!dirty) return;
  if (renderCost > SLOW_FRAME_MS && now - lastRenderAt < 2 * renderCost) return;
  dirty = false;
  const sel = state.views.get(state.selected);
  selectionBox.visible = !!sel && sel.count > 0;
  if (selectionBox.visible) {
    selectionBox.box.copy(sel.bounds()).expandByScalar(0.02);
  }
  renderer.render(scene, camera);
  lastRenderAt = now;
  timing = true;
  hook.renders++;
  for (const [id, v] of state.views) if (v.frame >= 0) hook.rendered[id] = v.frame;
}

// Test hooks: a fixed camera, and the colliders' inset and visibility (the
// drape test renders with and without them to find the cloth's outline and
// what of a collider shows through it).
hook.view = (position, target) => {
  flight = null;
  controls.target.set(...target);
  camera.position.set(...position);
  camera.near = 0.01;
  camera.far = 100;
  camera.updateProjectionMatrix();
  controls.update();
  markDirty();
};
hook.setColliderInset = (on) => {
  colliderInsetOn = !!on;
  for (const v of state.views.values()) v.setMeta(v.meta);
  markDirty();
};
hook.showColliders = (on) => {
  for (const v of state.views.values()) v.colliders.visible = !!on;
  markDirty();
};

showConnection();
setShadows(true);
setInterval(updateRows, 250);
setInterval(fitShadow, 1000);
connect();
requestAnimationFrame(loop);
