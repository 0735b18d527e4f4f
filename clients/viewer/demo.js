#!/usr/bin/env node
// Something to look at: the README's scene (a curtain pinned along its top
// row, blown onto a sphere in front of it, above a floor plane, and a soft
// ball dropped beside it) stepped at 60 Hz with gusts, until Ctrl-C, which
// destroys both again.
//
//   node clients/viewer/demo.js [--clothd host:port] [--seconds N] [--token-file PATH]
//   (or CLOTHD_TOKEN in the environment, for a clothd that wants a token)

import { ClothdConnection, loadToken, parseAddress } from './lib/clothd.js';

const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const { host, port } = parseAddress(arg('--clothd', '127.0.0.1:7878'));
const seconds = Number(arg('--seconds', 'Infinity'));

let token;
try {
  token = loadToken(arg('--token-file', null));
} catch (err) {
  console.error(`demo: ${err.message}`);
  process.exit(2);
}

const conn = await ClothdConnection.connect(host, port).catch((err) => {
  console.error(`demo: cannot reach clothd at ${host}:${port}: ${err.message}`);
  process.exit(1);
});
if (token !== null) {
  const reply = await conn.request('auth', { token }).catch((err) => {
    console.error(`demo: clothd at ${host}:${port} refused the token: ${err.message}`);
    process.exit(1);
  });
  if (reply.access !== 'full') {
    console.error(`demo: the token gives "${reply.access}" access; the demo needs the full token`);
    process.exit(1);
  }
}

// A refused request (say, clothd wants a token) ends the demo with its message.
const refused = (err) => {
  console.error(`demo: ${err.message}${err.code === 'unauthorized' ? ' (give the token with --token-file or CLOTHD_TOKEN)' : ''}`);
  process.exit(1);
};
const W = 24;
const { instance } = await conn.request('create', {
  width: W, height: 24, spacing: 0.1, origin: [-1.15, 2.6, 0], right: [1, 0, 0], down: [0, -1, 0],
}).catch(refused);
await conn.request('pin', { instance, particles: [...Array(W).keys()] });
await conn.request('addCollider', { instance, type: 'sphere', position: [0.1, 1.3, 0.55], radius: 0.35 });
await conn.request('addCollider', { instance, type: 'plane', position: [0, 0, 0], normal: [0, 1, 0] });
const ball = (await conn.request('create', {
  type: 'softbody', shape: 'ball', radius: 0.3, resolution: 5, center: [1.5, 1, 0],
})).instance;
await conn.request('addCollider', { instance: ball, type: 'plane', position: [0, 0, 0], normal: [0, 1, 0] });
console.log(`demo: curtain ${instance} and soft ball ${ball} on clothd ${host}:${port}; Ctrl-C ends it`);

let running = true;
const finish = async () => {
  if (!running) return;
  running = false;
  await conn.request('destroy', { instance }).catch(() => {});
  await conn.request('destroy', { instance: ball }).catch(() => {});
  conn.close();
};
process.on('SIGINT', finish);
process.on('SIGTERM', finish);
conn.on('close', () => { running = false; });

const t0 = Date.now();
for (let k = 0; running; k++) {
  const t = k / 60;
  if (t >= seconds) break;
  if (k % 6 === 0) {
    const gust = 2.5 + 1.5 * Math.sin(t * 0.9) + 0.8 * Math.sin(t * 2.3);
    await conn.request('wind', { instance, wind: [0.8 * Math.sin(t * 0.5), 0, gust] }).catch(() => {});
  }
  await conn.request('step', { dt: 1 / 60, instances: [instance, ball] }).catch(() => { running = false; });
  const ahead = t0 + ((k + 1) * 1000) / 60 - Date.now();
  if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
}
await finish();
