import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Child-process and server tests share 2 cores with everything else; give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
