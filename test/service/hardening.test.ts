/**
 * `continuity serve` against a person's mistakes and a slow or hostile client: a slow-header
 * connection is closed at `server.requestTimeout`, as documented; two `server.port: 0` instances
 * without a `state.dir` each get their own state directory; a YAML alias bomb is a configuration
 * error (exit 2) naming the file.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServe, tempDir } from './harness.js';

describe('continuity serve hardening', () => {
  it('closes a connection whose headers do not arrive within server.requestTimeout', async () => {
    const serve = await startServe({ config: { server: { requestTimeout: '1s' } } });
    try {
      const url = new URL(serve.base);
      const started = Date.now();
      const closedAfter = await new Promise<number>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          // Half a request line and one header, then nothing: a slowloris.
          socket.write('POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(Date.now() - started));
        // Read what the server says (its 408), or 'close' waits for the unread data.
        socket.resume();
        setTimeout(() => reject(new Error('the connection was still open after 15 s')), 15_000).unref();
      });
      // Node alone checks only every 30 s; the documented bound is the request timeout.
      expect(closedAfter).toBeLessThan(1000 + 2000);
    } finally {
      await serve.stop();
    }
  });

  it('gives each server.port: 0 instance its own state directory when none is configured', async () => {
    const xdg = tempDir('serve-xdg-');
    const env = { XDG_STATE_HOME: xdg };
    const a = await startServe({ config: { state: { dir: undefined } }, env });
    const b = await startServe({ config: { state: { dir: undefined } }, env });
    try {
      const dirs = readdirSync(join(xdg, 'agent-continuity')).sort();
      expect(dirs).toEqual([`serve-ephemeral-${a.pid}`, `serve-ephemeral-${b.pid}`].sort());
    } finally {
      expect(await a.stop()).toBe(0);
      expect(await b.stop()).toBe(0);
    }
  });

  it('exits 2 naming the file for a YAML alias bomb', () => {
    const dir = tempDir();
    const file = join(dir, 'bomb.yaml');
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 8; i++) {
      const prev = String.fromCharCode(97 + i);
      const next = String.fromCharCode(98 + i);
      lines.push(`${next}: &${next} [${Array(10).fill(`*${prev}`).join(',')}]`);
    }
    lines.push('server: { port: 0 }');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const r = spawnSync(process.execPath, ['bin/continuity.js', 'serve', '--config', file], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
      timeout: 60_000,
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/bomb\.yaml: \(aliases\): invalid YAML/);
  });
});
