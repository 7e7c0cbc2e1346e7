import { defineConfig } from 'vitest/config';

/**
 * `npm run test:stack`: the observability stack as the oracle (docs/stack.md). Apart from
 * `npm test` (which stays runnable without Go): its global set-up builds the Collector and Jaeger
 * with Go into a cache outside the repository, which takes minutes the first time.
 */
export default defineConfig({
  test: {
    include: ['test-stack/**/*.test.ts'],
    globalSetup: ['test-stack/setup.ts'],
    testTimeout: 10 * 60_000,
    hookTimeout: 15 * 60_000,
    pool: 'forks',
    // One stack at a time: the machine has 2 cores.
    fileParallelism: false,
  },
});
