#!/usr/bin/env node
// `npm run build` unless dist/ is newer than everything it is built from. npm runs `prepare` after
// `npm ci` and `npm install` in this checkout, when it installs the package from git (in its clone,
// with the devDependencies) and before `npm pack`; `npm run demo` and `npm test` build first too. So
// a checkout's `npm ci && npm run demo` and `npm test` build once, not three times, and a git
// install or a fresh clone always builds.
//
// "Newer" compares modification times: the last file the build writes (dist/cjs/package.json)
// against every file and folder under src/ and scripts/ (a deleted file changes its folder's time)
// and the manifests and tsconfigs. `npm run build` itself always rebuilds from an empty dist/.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', 'cjs', 'package.json');
const FILES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.client.json',
];
const TREES = ['src', 'scripts'];

/** The newest modification time under `path` (folders included), in ms. */
function newest(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let t = s.mtimeMs;
  for (const e of readdirSync(path, { withFileTypes: true })) t = Math.max(t, newest(join(path, e.name)));
  return t;
}

function stale() {
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const inputs = [...FILES, ...TREES].map((p) => join(root, p)).filter((p) => existsSync(p));
  return inputs.some((p) => newest(p) > built);
}

if (stale()) {
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
} else {
  process.stdout.write('dist/ is up to date (npm run build rebuilds it anyway)\n');
}
