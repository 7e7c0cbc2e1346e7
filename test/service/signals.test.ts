/**
 * `continuity serve` and a supervisor's SIGTERM: sent the moment the address line is read (as a
 * supervisor or a rolling restart may), it stops gracefully every time, exit 0; sent while the
 * service is still starting (its pending state just recovered), it stops gracefully too once the
 * start is over, exit 0.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, startServe, tempDir } from './harness.js';

describe('continuity serve and SIGTERM', () => {
  it('stops gracefully on a SIGTERM sent as soon as its address line is read, every time', async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const serve = await startServe();
      const code = await serve.stop(); // SIGTERM on reading the line, nothing in between
      outcomes.push(`${code} ${serve.stderr().includes('"msg":"shutting down"') ? 'graceful' : 'killed'}`);
    }
    expect(outcomes).toEqual(Array(10).fill('0 graceful'));
  });

  it('stops gracefully on a SIGTERM sent while it starts', async () => {
    const dir = tempDir('sigstart-');
    const file = join(dir, 'serve.json');
    writeFileSync(file, JSON.stringify({ server: { port: 0 }, state: { dir: join(dir, 'state') } }));
    const child = spawn(process.execPath, [BIN, 'serve', '--config', file], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    const exited = new Promise<[number | null, string | null]>((resolve) =>
      child.once('exit', (code, signal) => resolve([code, signal])),
    );
    child.stderr.on('data', (d) => {
      err += d;
      // Logged during the start, before the listeners are up (whether the start is over by the
      // time the signal arrives is up to the machine; either way the stop is graceful).
      if (err.includes('"msg":"pending state recovered"') && !err.includes('SIGTERM sent')) {
        err += 'SIGTERM sent\n';
        child.kill('SIGTERM');
      }
    });
    expect(await exited).toEqual([0, null]);
    expect(err).toContain('"msg":"shutting down","signal":"SIGTERM"');
    expect(err).toContain('"msg":"continuity serve stopped"');
  });
});
