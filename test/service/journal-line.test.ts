/**
 * The journal's lines written as bytes (`journal-line.ts`) against `JSON.stringify` as the
 * oracle: for every event the attribute codec reads, from well-formed attributes and from
 * attributes with hostile values in every field (quotes, backslashes, control characters, lone
 * surrogates, non-ASCII), and for hostile events made by hand, each line is the checksum and the
 * text `JSON.stringify` gives. The checksum is CRC-32, by zlib and by the table alike; lines
 * written before with a SHA-256 checksum are still read; bytes taken and not written go back in
 * front, in order.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { readCompactionSpan, snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import { JournalLines, lineChecksum, lineChecksumByTable } from '../../src/service/journal-line.js';
import { PendingStore } from '../../src/service/state.js';
import { tempDir } from './harness.js';

/** The journal's text of a value as `JSON.stringify` writes it, bigints as `{"$n": …}`. */
const oracle = (v: unknown) =>
  JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? { $n: x.toString() } : x));

/** A deterministic generator, so a failure names its seed. */
function rng(seed: number): () => number {
  let x = seed * 2654435761 + 7;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

const HOSTILE = ['a"b', 'a\\b', 'a\nb', '\u0001', '\ud800', 'é', '✓', 'a b', '', '"', 'sha256:"'];
const DIGESTS = [
  `sha256:${'0123456789abcdef'.repeat(4)}`,
  `hmac-sha256:${'f'.repeat(16)}:${'a'.repeat(64)}`,
  `sha256:${'9'.repeat(64)}`,
];

/** Attributes of a pre or post span, well-formed or with one hostile value somewhere. */
function attributes(r: () => number, phase: 'pre' | 'post'): Attributes {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const names = ['scope', 'approval_boundary', 'target', 'constraint', 'acceptance_test'].filter(
    () => r() < 0.7,
  );
  const decisions: Record<
    string,
    { digest: string; revision: number; observedAt: string; source?: string; approvalRef?: string }
  > = {};
  for (const n of names) {
    decisions[n] = {
      digest: pick(DIGESTS),
      revision: 1 + Math.floor(r() * 5),
      observedAt: pick(['2026-11-30T10:00:00Z', '2026-11-30T10:00:00.123456789Z']),
      ...(r() < 0.7 && { source: pick(['task-record', 'agent', 'a/b+c=d@e#f:g']) }),
      ...(r() < 0.3 && { approvalRef: pick(['ticket-1', 'PR#42']) }),
    };
  }
  const attrs: Record<string, AttributeValue> = {
    ...snapshotAttributes(
      phase,
      {
        sessionId: pick(['s-1', 'a.b:c@d#e+f=g/h-i', 'S_2']),
        capturedAt: pick(['2026-11-30T10:00:00Z', '2026-11-30T10:00:00.5Z']),
        normalizerVersion: 1 + Math.floor(r() * 2),
        decisions,
      },
      {
        ...(r() < 0.8 && { boundaryId: pick(['b-1', 'b:2']) }),
        ...(r() < 0.8 && { runtime: pick(['sdk', 'claude-code', 'codex-cli']) }),
        ...(r() < 0.8 && { trigger: pick(['auto', 'manual'] as const) }),
        ...(phase === 'post' && r() < 0.5 && { compactedAt: '2026-11-30T10:04:00Z' }),
      },
    ),
  } as Record<string, AttributeValue>;
  if (r() < 0.15) attrs['continuity.evidence_missing'] = pick(['capture_failed', 'a"b']);
  if (r() < 0.5) {
    // One hostile value in a random field the codec reads.
    const keys = Object.keys(attrs);
    attrs[pick(keys)] = pick(HOSTILE);
  }
  return attrs;
}

/** The line the journal must hold for a record: the checksum and the text of JSON.stringify. */
const expectedLine = (record: object, seq: number) => {
  const json = oracle({ ...record, seq });
  return `${lineChecksum(json)} ${json}\n`;
};

/** What JournalLines writes for these records, as text. */
function written(records: Array<{ op: string; at: number; event?: unknown }>, firstSeq = 1): string {
  const lines = new JournalLines(64);
  for (const [i, r] of records.entries()) lines.append(r, firstSeq + i, oracle);
  return lines.take().toString('utf8');
}

describe('JournalLines', () => {
  it('writes what JSON.stringify writes for every pre and post event the codec reads, hostile values included', () => {
    let events = 0;
    const records: Array<{ op: string; at: number; event: unknown }> = [];
    for (let seed = 0; seed < 4000; seed++) {
      const r = rng(seed);
      const phase = seed % 2 ? 'post' : 'pre';
      const span = r() < 0.8 ? { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) } : undefined;
      const time = r() < 0.9 ? '1764500000000000001' : 'not a time';
      const event = readCompactionSpan(
        phase === 'pre' ? SPAN_COMPACTION_PRE : SPAN_COMPACTION_POST,
        attributes(r, phase),
        time,
        span,
      );
      if (event === undefined) continue;
      events++;
      records.push({ op: 'observe', at: 1764500000000 + seed, event });
    }
    expect(events).toBeGreaterThan(3000);
    // One buffer for all (it grows from 64 bytes), each line as the oracle writes it.
    expect(written(records, 7)).toBe(records.map((rec, i) => expectedLine(rec, 7 + i)).join(''));
  });

  it('writes hostile events made by hand, and records of any other kind, as JSON.stringify does', () => {
    const pre = readCompactionSpan(
      SPAN_COMPACTION_PRE,
      attributes(rng(1), 'pre'),
      '1764500000000000001',
    ) as unknown as Record<string, unknown>;
    const snapshot = {
      sessionId: 's',
      capturedAt: '2026-11-30T10:00:00Z',
      normalizerVersion: 1,
      decisions: {},
    };
    const hostile: Array<{ op: string; at: number; event?: unknown }> = [
      // Strings the fast path does not write itself, in every position.
      ...HOSTILE.map((h) => ({ op: 'observe', at: 1, event: { ...pre, sessionId: h } })),
      ...HOSTILE.map((h) => ({
        op: 'observe',
        at: 1,
        event: {
          ...pre,
          snapshot: { ...snapshot, decisions: { [h]: { digest: 'd', revision: 1, observedAt: h } } },
        },
      })),
      { op: 'observe', at: 1, event: { ...pre, extra: { nested: 2n ** 70n } } },
      { op: 'observe', at: 1, event: { ...pre, timeNs: 5 } },
      { op: 'observe', at: 1, event: { ...pre, snapshot: { ...snapshot, normalizerVersion: Number.NaN } } },
      { op: 'observe', at: Number.POSITIVE_INFINITY, event: pre },
      { op: 'observe', at: 2, event: { kind: 'approval', sessionId: 's', timeNs: null, approval: null } },
      { op: 'observe', at: 2, event: null },
      { op: 'expire', at: 3 },
      { op: 'observe', at: 4, event: { ...pre, constructor: 'x' } },
      { op: 'observe', at: 4, event: Object.assign(Object.create({ inherited: 1 }), pre) },
    ];
    for (const [i, rec] of hostile.entries())
      expect(written([rec], i + 1), `record ${i}`).toBe(expectedLine(rec, i + 1));
  });

  it('gives bytes taken and not written back in front of those appended since', () => {
    const lines = new JournalLines(64);
    lines.append({ op: 'expire', at: 1 }, 1, oracle);
    const taken = lines.take();
    lines.append({ op: 'expire', at: 2 }, 2, oracle);
    lines.restore(taken);
    lines.append({ op: 'expire', at: 3 }, 3, oracle);
    expect(lines.take().toString()).toBe(
      [1, 2, 3].map((n) => expectedLine({ op: 'expire', at: n }, n)).join(''),
    );
    lines.release();
    // Once released, the buffers take turns and what was written is not written again.
    lines.append({ op: 'expire', at: 4 }, 4, oracle);
    expect(lines.take().toString()).toBe(expectedLine({ op: 'expire', at: 4 }, 4));
  });
});

describe('the line checksum', () => {
  it('is CRC-32 of the UTF-8 bytes, the same by node:zlib and by the table', () => {
    for (const text of ['', 'a', '{"op":"expire","at":1,"seq":2}', 'é✓\u{1F600}', 'x'.repeat(5000)]) {
      const expected = (zlib.crc32 as (d: string) => number)(text).toString(16).padStart(8, '0');
      expect(lineChecksum(text)).toBe(expected);
      expect(lineChecksumByTable(text)).toBe(expected);
    }
  });

  it('bigints come back exactly where a reviver would have restored them, and nowhere else', async () => {
    const dir = join(tempDir('journal-bigints-'), 'state');
    const first = await PendingStore.open({ dir, compactAfterBytes: 1 << 20 });
    await first.store.close();
    const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-'))!);
    const events = [
      { n: { $n: '5' }, neg: { $n: '-12345678901234567890' }, list: [{ $n: '7' }, { $n: 'x' }, 3] },
      { notBig: { $n: '5', other: 1 }, text: { $n: 'five' }, nested: { $n: { $n: '9' } } },
      JSON.parse('{"__proto__": {"$n": "3"}, "deep": [[{"a": {"$n": "11"}}]]}'),
    ];
    const reviver = (_k: string, v: unknown) => {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const keys = Object.keys(v);
        const n = (v as { $n?: unknown }).$n;
        if (keys.length === 1 && keys[0] === '$n' && typeof n === 'string' && /^-?\d+$/.test(n))
          return BigInt(n);
      }
      return v;
    };
    const lines = events.map((event, i) => {
      const json = JSON.stringify({ op: 'observe', at: i, event, seq: i + 1 });
      return `${lineChecksum(json)} ${json}\n`;
    });
    writeFileSync(journal, lines.join(''));
    const again = await PendingStore.open({ dir, compactAfterBytes: 1 << 20 });
    await again.store.close();
    expect(again.recovered.problems).toEqual([]);
    const expected = lines.map((l) => JSON.parse(l.slice(9), reviver));
    expect(again.recovered.records).toEqual(expected);
    expect((again.recovered.records[0] as { event: { neg: bigint } }).event.neg).toBe(-12345678901234567890n);
    // "__proto__" stays an own property with its bigint, never the object's prototype.
    const third = again.recovered.records[2] as { event: Record<string, unknown> };
    expect(Object.getPrototypeOf(third.event)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(third.event, '__proto__')?.value).toBe(3n);
  });

  it('lines written before with a SHA-256 checksum are still read, and a damaged one still refused', async () => {
    const dir = join(tempDir('journal-legacy-'), 'state');
    const first = await PendingStore.open({ dir, compactAfterBytes: 1 << 20 });
    await first.store.close();
    const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-'))!);
    const legacy = (v: unknown) => {
      const json = oracle(v);
      return `${createHash('sha256').update(json).digest('hex').slice(0, 16)} ${json}\n`;
    };
    const pre = { kind: 'pre', sessionId: 's1', timeNs: 1764500000000000001n };
    writeFileSync(
      journal,
      legacy({ op: 'observe', at: 1, event: pre, seq: 1 }) +
        legacy({ op: 'expire', at: 2, seq: 2 }).replace('"at":2', '"at":3') +
        legacy({ op: 'expire', at: 4, seq: 3 }),
    );
    const again = await PendingStore.open({ dir, compactAfterBytes: 1 << 20 });
    expect(again.recovered.records).toEqual([
      { op: 'observe', at: 1, event: pre, seq: 1 },
      { op: 'expire', at: 4, seq: 3 },
    ]);
    expect(again.recovered.problems.join('\n')).toMatch(/record 2 failed its checksum/);
    // New records follow in the new form, and both read back together.
    await again.store.durable(again.store.record({ op: 'expire', at: 5 }));
    await again.store.close();
    const newest = readdirSync(dir)
      .filter((f) => f.startsWith('journal-'))
      .sort()
      .at(-1)!;
    expect(readFileSync(join(dir, newest), 'utf8')).toMatch(
      /^[0-9a-f]{8} \{"op":"expire","at":5,"seq":4\}\n$/,
    );
    const third = await PendingStore.open({ dir, compactAfterBytes: 1 << 20 });
    expect(third.recovered.records.map((r) => r.seq)).toEqual([1, 3, 4]);
    await third.store.close();
  });
});
