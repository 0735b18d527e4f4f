#!/usr/bin/env node
// A 20 x 20 curtain pinned along its top row and dropped from horizontal,
// stepped for 4 s at 60 Hz. Every 0.25 s it prints the bottom row's mean
// height, read from the binary frames the server streams, next to the height
// it hangs at when straight (top - (height - 1) * spacing), so you can watch
// it swing down and settle.
//
//   node clients/node/examples/curtain.mjs [--host 127.0.0.1] [--port 7878]

import { parseArgs } from 'node:util';
import { Client } from '../index.js';

const WIDTH = 20;
const HEIGHT = 20;
const SPACING = 0.05;
const TOP = 2;
const HZ = 60;
const SECONDS = 4;
const REPORT_EVERY = HZ / 4;

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '7878' },
  },
});

const client = await Client.connect({ host: values.host, port: Number(values.port) });
// Rows go along +z (down = [0, 0, 1]): the curtain starts horizontal and
// swings down under gravity around its pinned top row.
const cloth = await client.createCloth({
  width: WIDTH,
  height: HEIGHT,
  spacing: SPACING,
  origin: [0, TOP, 0],
  right: [1, 0, 0],
  down: [0, 0, 1],
  damping: 0.02,
  solverIterations: 8,
});
await client.pin(cloth, Array.from({ length: WIDTH }, (_, x) => x)); // the top row, where it is

const frames = client.frames({ instance: cloth }); // before subscribe: frame 0 follows its reply
await client.subscribe({ instance: cloth });

const straight = TOP - (HEIGHT - 1) * SPACING;
console.log(`curtain ${cloth}: ${WIDTH}x${HEIGHT}, spacing ${SPACING} m, top row pinned at y = ${TOP}`);
console.log(`${'time s'.padStart(7)}  ${'bottom y'.padStart(9)}  ${'hanging y'.padStart(9)}`);

function bottomY(positions) {
  let sum = 0;
  for (let x = 0; x < WIDTH; x++) sum += positions[3 * ((HEIGHT - 1) * WIDTH + x) + 1];
  return sum / WIDTH;
}

try {
  await frames.next(); // frame 0: the flat start
  for (let i = 1; i <= SECONDS * HZ; i++) {
    await client.step({ dt: 1 / HZ, instances: [cloth] });
    const { value: frame } = await frames.next(); // this step's frame: a Float32Array of positions
    if (frame.frame % REPORT_EVERY === 0) {
      console.log(`${frame.time.toFixed(2).padStart(7)}  ${bottomY(frame.positions).toFixed(4).padStart(9)}  ${straight.toFixed(4).padStart(9)}`);
    }
  }
} finally {
  await frames.return();
  await client.destroy(cloth);
  await client.close();
}
