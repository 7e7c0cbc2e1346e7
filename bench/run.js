#!/usr/bin/env node
// `npm run bench`: runs every bench/*.bench.js in its own process, one after another, so one
// benchmark's heap and JIT state never colour another's. Each prints ratios against a baseline
// measured in the same run (machines here are shared and noisy).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const scripts = readdirSync(here)
  .filter((f) => f.endsWith('.bench.js'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failed = 0;
for (const s of scripts) {
  process.stdout.write(`\n== ${s}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, s)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
