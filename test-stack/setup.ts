/**
 * Global set-up of `npm run test:stack`: builds (or finds in the cache) the Collector, Jaeger and
 * the Python agent's virtual environment (scripts/stack/toolchain.js), installs Prometheus and
 * Alertmanager as `npm test` does, and hands the paths to the test files. Fails with one line
 * naming what to install when Go (or Python) is missing.
 */
import type { TestProject } from 'vitest/node';
import { ensureStack, STACK_VERSIONS } from '../scripts/stack/toolchain.js';
import { ensurePrometheusTools } from '../test/alerting/tools.js';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: { collector: string; jaeger: string; python: string };
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  const built = await ensureStack();
  await ensurePrometheusTools();
  const took = (ms: number | null) => (ms === null ? 'cached' : `built in ${(ms / 1000).toFixed(0)} s`);
  process.stderr.write(
    `stack: Collector ${STACK_VERSIONS.collector} (builder ${took(built.collector.builderBuiltMs)}, ${took(built.collector.builtMs)}), ` +
      `Jaeger ${STACK_VERSIONS.jaeger} (${took(built.jaeger.builtMs)}), Python OTel ${STACK_VERSIONS.pythonOtel} (${took(built.python.builtMs)}); ` +
      `set-up ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
  );
  project.provide('stack', {
    collector: built.collector.path,
    jaeger: built.jaeger.path,
    python: built.python.path,
  });
}
