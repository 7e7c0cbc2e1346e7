// @ts-check
// What `import 'agent-continuity'` costs an app at start-up, against importing
// `@opentelemetry/api` alone (the one thing the root entry must load), in the same run. Each
// sample is a fresh Node process that times its own `import()` (process start-up is not in it);
// the figure is the median of 5 samples per entry, alternating, so a burst of load on the shared
// machine hits both sides. Goal: the root entry at most 2x the api alone. `require()` of the
// CommonJS build is measured against `require('@opentelemetry/api')` the same way.
//
// Run: npm run bench (builds first), or node bench/run.js import after `npm run build`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SAMPLES = 5;
const repo = fileURLToPath(new URL('..', import.meta.url));

/** One fresh process timing one load of `what` (`import` or `require`); milliseconds. */
function sample(kind, what) {
  const load =
    kind === 'import' ? `await import(${JSON.stringify(what)})` : `require(${JSON.stringify(what)})`;
  const script = `const t = performance.now(); ${load}; process.stdout.write(String(performance.now() - t));`;
  const args = kind === 'import' ? ['--input-type=module', '-e', script] : ['-e', script];
  const r = spawnSync(process.execPath, args, { cwd: repo, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${kind} ${what}: ${r.stderr.trim()}`);
  return Number(r.stdout);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Median times of `base` and `subject`, sampled alternately. */
function compare(kind, base, subject) {
  const a = [];
  const b = [];
  sample(kind, subject); // warm the file system cache for both
  for (let i = 0; i < SAMPLES; i++) {
    a.push(sample(kind, base));
    b.push(sample(kind, subject));
  }
  return { base: median(a), subject: median(b) };
}

for (const [kind, subject] of [
  ['import', 'agent-continuity'],
  ['require', 'agent-continuity'],
]) {
  const { base, subject: s } = compare(kind, '@opentelemetry/api', subject);
  console.log(
    `${kind}('${subject}'), median of ${SAMPLES}: ${s.toFixed(1)} ms vs ${kind}('@opentelemetry/api') alone ${base.toFixed(1)} ms: ${(s / base).toFixed(2)}x (goal <= 2x)`,
  );
}
