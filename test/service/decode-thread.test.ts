/**
 * The body decoder thread (src/service/decode-thread.ts): zstd, snappy and LZ4 bodies decoded in a
 * worker answer exactly what decoding them on the event loop answers (bytes, or status, code and
 * message), for bodies written by the real `zstd` and `lz4` programs and snappyjs, valid,
 * corrupted and over the limit; the event loop runs while a large body decodes; no caller's memory
 * is taken that was not its own; a worker that stops answers what it was decoding 400 and what
 * waited 503, and the next body starts a new one; a worker that cannot start leaves the bodies to
 * be decoded in place; an idle worker keeps no process alive.
 *
 * A worker thread runs JavaScript files, so these tests load the built module (dist/, which
 * `npm test` builds first), as the running service does.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import snappyjs from 'snappyjs';
import { beforeAll, describe, expect, it } from 'vitest';
import type * as BodyModule from '../../src/service/body.js';
import type * as ThreadModule from '../../src/service/decode-thread.js';
import { ensureSystemTools } from '../support/peers.js';
import { tempDir } from './harness.js';

const dist = (p: string) => new URL(`../../dist/${p}`, import.meta.url).href;
let body: typeof BodyModule;
let thread: typeof ThreadModule;

const MiB = 1 << 20;
const LIMIT = 4 * MiB;

beforeAll(async () => {
  await ensureSystemTools([
    { command: 'zstd', debianPackage: 'zstd' },
    { command: 'lz4', debianPackage: 'lz4' },
  ]);
  body = (await import(dist('service/body.js'))) as typeof BodyModule;
  thread = (await import(dist('service/decode-thread.js'))) as typeof ThreadModule;
}, 600_000);

const text = Buffer.from(
  Array.from({ length: 40_000 }, (_, i) => `span-${i % 97} gen_ai.input.messages ${i * 7919}\n`).join(''),
);
const zstd = (data: Buffer, level = 3) =>
  execFileSync('zstd', ['-q', '-c', `-${level}`], { input: data, maxBuffer: 64 * MiB });
const lz4 = (data: Buffer) => execFileSync('lz4', ['-q', '-c'], { input: data, maxBuffer: 64 * MiB });

interface Outcome {
  /** The decoded body's length and its first and last bytes. */
  bytes?: string;
  error?: { name: string; status?: number; code?: string; message: string };
}

/** What a decode comes to: the decoded bytes, or the error's fields. */
async function outcome(p: () => Promise<Buffer>): Promise<Outcome> {
  try {
    const out = await p();
    return {
      bytes: `${out.length}:${out.subarray(0, 64).toString('hex')}:${out.subarray(-64).toString('hex')}`,
    };
  } catch (e) {
    const { name, message } = e as Error;
    const { status, code } = e as { status?: number; code?: string };
    return { error: { name, status, code, message } };
  }
}

describe('the body decoder thread', () => {
  it('answers what decoding on the event loop answers: valid, corrupted and oversized bodies', async () => {
    const decoder = new thread.DecoderThread();
    try {
      let seed = 20261201;
      const rand = (n: number) => {
        seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
        return seed % n;
      };
      const sample = text.subarray(0, 60_000);
      const valid: Array<[BodyModule.InProcessCoding, Buffer]> = [
        ['zstd', zstd(sample)],
        ['zstd', zstd(Buffer.alloc(8 * MiB), 19)], // over the limit
        ['lz4', lz4(sample)],
        ['lz4', lz4(Buffer.alloc(8 * MiB))], // over the limit
        ['snappy', Buffer.from(snappyjs.compress(sample))],
        ['x-snappy-framed', Buffer.from('not framed at all')],
      ];
      const kinds = new Set<string>();
      for (const [coding, good] of valid) {
        for (let i = 0; i < 40; i++) {
          const b = Buffer.from(good);
          if (i > 0) for (let f = 0; f < 1 + rand(3); f++) b[rand(b.length)] = rand(256);
          const cut = i % 7 === 3 ? b.subarray(0, rand(b.length)) : b;
          const here = await outcome(async () => body.decodeInProcess(Buffer.from(cut), coding, LIMIT));
          const there = await outcome(() => decoder.decode(Buffer.from(cut), coding, LIMIT));
          expect(there, `${coding} body ${i}`).toEqual(here);
          kinds.add(here.bytes !== undefined ? 'decoded' : String(here.error?.status));
        }
      }
      // The corpus holds every kind of answer: decoded, 400 and 413.
      expect([...kinds].sort()).toEqual(['400', '413', 'decoded']);
      const answers = await outcome(() => decoder.decode(zstd(sample), 'zstd', LIMIT));
      expect(answers).toEqual({ bytes: (await outcome(async () => sample)).bytes });
    } finally {
      await decoder.close();
    }
  });

  it('keeps the event loop running while a large body decodes (decoding in place does not)', async () => {
    const big = zstd(Buffer.concat(Array.from({ length: 8 }, () => text)), 1);
    const decoder = new thread.DecoderThread();
    try {
      // A callback queued before the decode runs before the decode is answered only if the
      // event loop was free while it ran.
      const ranBefore = async (decode: () => Promise<Buffer>) => {
        let ran = false;
        setImmediate(() => {
          ran = true;
        });
        const out = await decode();
        expect(out.length).toBe(8 * text.length);
        return ran;
      };
      expect(await ranBefore(() => body.decodeBody(Buffer.from(big), 'zstd', 64 * MiB))).toBe(false);
      expect(await ranBefore(() => body.decodeBody(Buffer.from(big), 'zstd', 64 * MiB, decoder))).toBe(true);
    } finally {
      await decoder.close();
    }
  });

  it('moves a body that owns its memory and copies one that shares it, leaving the rest intact', async () => {
    const decoder = new thread.DecoderThread();
    try {
      const z = zstd(text);
      const owned = Buffer.alloc(z.length);
      z.copy(owned);
      expect((await decoder.decode(owned, 'zstd', LIMIT)).equals(text)).toBe(true);
      expect(owned.buffer.byteLength).toBe(0); // moved to the worker, as documented

      const shared = Buffer.alloc(z.length + 200, 7);
      z.copy(shared, 100);
      const view = shared.subarray(100, 100 + z.length);
      expect((await decoder.decode(view, 'zstd', LIMIT)).equals(text)).toBe(true);
      expect(shared.length).toBe(z.length + 200);
      expect(shared[0]).toBe(7);
      expect(shared.subarray(100, 100 + z.length).equals(z)).toBe(true);
    } finally {
      await decoder.close();
    }
  });

  it('answers the body a stopped worker was decoding 400, the ones behind it 503, then starts again', async () => {
    // A stand-in worker that dies on a body starting with 0xEE and otherwise echoes the body back;
    // the two bodies below are sent together, so the second waits behind the first.
    const dir = tempDir('decode-thread-');
    const entry = join(dir, 'worker.mjs');
    writeFileSync(
      entry,
      `import { parentPort } from 'node:worker_threads';
parentPort.on('message', (job) => {
  const first = new Uint8Array(job.body)[0];
  if (first === 0xee) process.exit(3);
  else parentPort.postMessage({ id: job.id, ok: true, body: job.body }, [job.body]);
});
parentPort.postMessage({ ready: true });
`,
    );
    const stops: string[] = [];
    const decoder = new thread.DecoderThread({
      entry: pathToFileURL(entry),
      onStop: (d, restarts) => stops.push(`${d}${restarts ? ', restarts' : ''}`),
    });
    try {
      expect((await decoder.decode(Buffer.from('first'), 'lz4', LIMIT)).toString()).toBe('first');
      const poison = outcome(() => decoder.decode(Buffer.from([0xee, 1, 2]), 'zstd', LIMIT));
      const behind = outcome(() => decoder.decode(Buffer.from('behind'), 'lz4', LIMIT));
      const p = (await poison).error;
      expect(p).toMatchObject({ name: 'BodyError', status: 400, code: 'bad_compression' });
      expect(p?.message).toMatch(
        /^Content-Encoding is zstd but the decoder stopped on this body \(exit code 3\)/,
      );
      expect((await behind).error).toMatchObject({
        name: 'Refusal',
        status: 503,
        message: 'the body decoder stopped before this body; retry',
      });
      expect(stops).toEqual(['exit code 3, restarts']);
      expect((await decoder.decode(Buffer.from('again'), 'lz4', LIMIT)).toString()).toBe('again');
    } finally {
      await decoder.close();
    }
    await expect(decoder.decode(Buffer.from('late'), 'lz4', LIMIT)).rejects.toMatchObject({
      name: 'Refusal',
      status: 503,
    });
  });

  it('decodes in place, and says so once, when the thread cannot start', async () => {
    const stops: string[] = [];
    const missing = pathToFileURL(join(tempDir('decode-missing-'), 'no-such-worker.js'));
    const decoder = new thread.DecoderThread({
      entry: missing,
      onStop: (d, restarts) => stops.push(`${d}${restarts ? ', restarts' : ''}`),
    });
    try {
      const z = zstd(text);
      for (let i = 0; i < 3; i++)
        expect((await decoder.decode(Buffer.from(z), 'zstd', LIMIT)).equals(text)).toBe(true);
      await expect(decoder.decode(Buffer.from('not zstd'), 'zstd', LIMIT)).rejects.toMatchObject({
        status: 400,
        code: 'bad_compression',
      });
      expect(stops).toHaveLength(1);
      expect(stops[0]).toMatch(/^Error \w*MODULE_NOT_FOUND$/);
      // Names and codes only: no path reaches the log.
      expect(stops.join()).not.toContain('no-such-worker');
    } finally {
      await decoder.close();
    }
  });

  it('does not keep a process alive once its bodies are decoded', () => {
    const script = `import(${JSON.stringify(dist('service/decode-thread.js'))}).then(async ({ DecoderThread }) => {
  const t = new DecoderThread();
  const out = await t.decode(Buffer.from(process.argv[1], 'base64'), 'zstd', 1 << 20);
  process.stdout.write(String(out.length));
});`;
    // Without the worker's unref the child would wait forever and the timeout would fail this.
    const out = execFileSync(
      process.execPath,
      ['-e', script, zstd(text.subarray(0, 5000)).toString('base64')],
      {
        timeout: 30_000,
        encoding: 'utf8',
      },
    );
    expect(out).toBe('5000');
  });
});
