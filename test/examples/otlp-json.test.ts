/**
 * examples/otlp-json as a non-Node agent uses it: send-boundary.sh runs as a real child process
 * (sh + curl) against a real `continuity serve` child process with a real downstream receiver;
 * the enriched post spans and the service's /metrics are checked. Beside it, everything the
 * example states that could rot: the precomputed digests (script and README) against
 * digestValue(), the Python digest helper against the golden vectors, the README's OTLP/JSON
 * example through the decoder and the attribute codec, and every attribute name it mentions
 * against src/otel/semconv.ts.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyHex } from '../../src/authority/signing.js';
import { ACTIONS, type ContinuityState, DECISION_REASONS } from '../../src/classify/states.js';
import { digestValue } from '../../src/digest/digest.js';
import { readCompactionSpan } from '../../src/otel/attributes.js';
import * as semconv from '../../src/otel/semconv.js';
import {
  ATTR_ACTIVITY_STATE,
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_PRIMARY_DECISION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  DECISION_FIELDS,
  decisionAttr,
  METRIC_ATTR_ACTIVITY,
  METRIC_ATTR_PRIMARY_DECISION,
  METRIC_ATTR_REASON,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_STATE,
  METRIC_ATTR_TRIGGER,
  METRIC_BOUNDARIES,
  METRIC_SERVICE_SPANS_RECEIVED,
  METRIC_SESSIONS,
  PROMETHEUS_NAMES,
  SERVICE_PROMETHEUS_NAMES,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { attributesToRecord, decodeTraceRequest } from '../../src/otlp/index.js';
import {
  type Downstream,
  type ServeProcess,
  scrape,
  startDownstream,
  startServe,
  total,
  waitFor,
} from '../service/harness.js';
import { deadEndpoint } from '../support/otlp-receiver.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = join(ROOT, 'examples', 'otlp-json');
const SCRIPT = join(DIR, 'send-boundary.sh');
const PY_DIGEST = join(DIR, 'continuity_digest.py');
const README = readFileSync(join(DIR, 'README.md'), 'utf8');
const SCRIPT_TEXT = readFileSync(SCRIPT, 'utf8');
/** The runtime name the script reports (continuity.runtime, a metric attribute). */
const RUNTIME = 'example-agent';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; the caller's OTEL_* and CONTINUITY_* are not inherited. */
function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<Run> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('OTEL_') && !k.startsWith('CONTINUITY_')) clean[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...clean, ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) {
      // A child that exits before reading all of its input must not fail the test with EPIPE.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
  });
}

/** `NAME_VALUE='…'` / `NAME_DIGEST='…'` pairs of the script. */
function scriptPairs(): Map<string, { value: string; digest: string }> {
  const values = new Map(
    [...SCRIPT_TEXT.matchAll(/^([A-Z_]+)_VALUE='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  const digests = new Map(
    [...SCRIPT_TEXT.matchAll(/^([A-Z_]+)_DIGEST='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  expect([...digests.keys()].sort()).toEqual([...values.keys()].sort());
  return new Map([...values].map(([k, value]) => [k, { value, digest: digests.get(k)! }]));
}

/** The body of the first fenced block of `lang` in the README. */
function fenced(lang: string): string {
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\\n\`\`\``).exec(README);
  expect(m, `a \`\`\`${lang} block in the README`).not.toBeNull();
  return m![1]!;
}

/**
 * Every name the project defines: span names and attribute keys from semconv.ts, with
 * per-decision keys for the decision `scope`.
 */
const KNOWN_NAMES = new Set<string>([
  ...(Object.values(semconv) as unknown[]).filter((v): v is string => typeof v === 'string'),
  ...DECISION_FIELDS.map((f) => decisionAttr('scope', f)),
]);

/** The names among `candidates` that are not known; `{name}`, `<name>`, `$1` stand for `scope`. */
function unknownNames(candidates: Iterable<string>): string[] {
  const out: string[] = [];
  for (const raw of candidates) {
    const forms = raw.includes('{phase}')
      ? [raw.replace('{phase}', 'pre'), raw.replace('{phase}', 'post')]
      : [raw.replace(/\{name\}|<name>|\$1/, 'scope')];
    for (const f of forms) if (!KNOWN_NAMES.has(f)) out.push(raw);
  }
  return out;
}

describe('examples/otlp-json', () => {
  describe('digests', () => {
    it('every precomputed digest in send-boundary.sh is digestValue() of the value beside it', () => {
      const pairs = scriptPairs();
      expect(pairs.size).toBe(4);
      for (const [name, { value, digest }] of pairs) {
        expect(digest, name).toBe(digestValue(JSON.parse(value)));
      }
    });

    it('the README lists the same values and digests as the script', () => {
      const rows = [
        ...README.matchAll(/^\| `[a-z_]+`[^|]*\| `([^`]+)` \| `(sha256:[0-9a-f]{64})` \|$/gm),
      ].map((m) => `${m[1]} ${m[2]}`);
      const pairs = [...scriptPairs().values()].map((p) => `${p.value} ${p.digest}`);
      expect(rows.sort()).toEqual(pairs.sort());
    });

    it('continuity_digest.py gives digestValue() for every golden vector and refuses what it refuses', async () => {
      const vectors = JSON.parse(readFileSync(join(ROOT, 'test/vectors/sha256.json'), 'utf8')) as {
        vectors: Array<{ name: string; input: string; digest: string }>;
      };
      const rejected = (
        JSON.parse(readFileSync(join(ROOT, 'test/vectors/canonical-json.json'), 'utf8')) as {
          rejected: Array<{ input: string }>;
        }
      ).rejected;
      // Parsed as ECMAScript parses JSON (every number a double), as the vectors are defined.
      const program = `
import json, sys
sys.path.insert(0, ${JSON.stringify(DIR)})
from continuity_digest import digest
data = json.load(sys.stdin)
out = {"digests": [digest(json.loads(t, parse_int=lambda s: float(int(s)))) for t in data["inputs"]], "refused": []}
for t in data["rejected"]:
    try:
        digest(json.loads(t))
        out["refused"].append(False)
    except ValueError:
        out["refused"].append(True)
print(json.dumps(out))
`;
      const input = JSON.stringify({
        inputs: vectors.vectors.map((v) => v.input),
        rejected: rejected.map((r) => r.input),
      });
      const r = await run('python3', ['-c', program], {}, input);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { digests: string[]; refused: boolean[] };
      expect(vectors.vectors.length).toBeGreaterThan(30);
      vectors.vectors.forEach((v, i) => {
        expect(out.digests[i], v.name).toBe(v.digest);
        expect(out.digests[i], v.name).toBe(digestValue(JSON.parse(v.input)));
      });
      expect(rejected.length).toBeGreaterThan(0);
      expect(out.refused).toEqual(rejected.map(() => true));
    });

    it('continuity_digest.py prints the digest of a JSON value given on its command line', async () => {
      for (const { value, digest } of scriptPairs().values()) {
        const r = await run('python3', [PY_DIGEST, value]);
        expect(r.code).toBe(0);
        expect(r.stdout).toBe(`${digest}\n`);
      }
    });
  });

  describe('the README', () => {
    it('its OTLP/JSON example decodes and reads as a pre snapshot of the example decisions', () => {
      const request = decodeTraceRequest(fenced('json'), 'json');
      const spans = request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
      expect(spans).toHaveLength(1);
      const span = spans[0]!;
      const event = readCompactionSpan(
        span.name,
        attributesToRecord(span.attributes),
        span.startTimeUnixNano,
      );
      expect(event?.kind).toBe('pre');
      if (event?.kind !== 'pre') return;
      expect(event.evidenceMissing).toBeUndefined();
      const pairs = scriptPairs();
      expect(event.snapshot?.decisions).toEqual({
        scope: { digest: pairs.get('SCOPE')!.digest, revision: 1, observedAt: '2026-05-04T10:00:00Z' },
        target: { digest: pairs.get('TARGET')!.digest, revision: 1, observedAt: '2026-05-04T10:00:00Z' },
        acceptance_test: {
          digest: pairs.get('ACCEPTANCE_TEST')!.digest,
          revision: 1,
          observedAt: '2026-05-04T10:00:00Z',
        },
      });
    });

    it('its Python snippet parses and uses only attribute and span names that exist', async () => {
      const snippet = fenced('python');
      const r = await run('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], {}, snippet);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const names = [...snippet.matchAll(/f?"((?:continuity|session|gen_ai)\.[a-z_.{}]+)"/g)].map(
        (m) => m[1]!,
      );
      expect(names.length).toBeGreaterThanOrEqual(12);
      expect(unknownNames(names)).toEqual([]);
      for (const required of [SPAN_ACTIVITY, ATTR_SESSION_ID, ATTR_ACTIVITY_STATE]) {
        expect(names).toContain(required);
      }
    });

    it('names only attributes and spans that exist, and so does the script', () => {
      const inReadme = [...README.matchAll(/`((?:continuity|session|gen_ai)\.[a-z_.<>]+[a-z_])`/g)].map(
        (m) => m[1]!,
      );
      const inScript = [...SCRIPT_TEXT.matchAll(/\b((?:continuity|session|gen_ai)\.[a-z_.$1]+[a-z_])/g)].map(
        (m) => m[1]!,
      );
      expect(inReadme.length).toBeGreaterThan(30);
      expect(inScript.length).toBeGreaterThan(20);
      expect(unknownNames(inReadme)).toEqual([]);
      expect(unknownNames(inScript)).toEqual([]);
      // The four spans of the contract each have a section.
      for (const name of [SPAN_COMPACTION_PRE, SPAN_COMPACTION_POST, SPAN_DECISION_APPROVAL, SPAN_ACTIVITY]) {
        expect(README).toContain(`### \`${name}\``);
      }
    });
  });

  describe('send-boundary.sh against continuity serve', () => {
    let downstream: Downstream;
    let serve: ServeProcess;

    beforeAll(async () => {
      downstream = await startDownstream();
      // The human's approver key: serve trusts it, and the script's signer signs with it.
      const { privateKey } = generateKeyPairSync('ed25519');
      signerDir = mkdtempSync(join(tmpdir(), 'otlp-json-signer-'));
      const keyFile = join(signerDir, 'approver.pem');
      writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
      signer = join(signerDir, 'sign.mjs');
      writeFileSync(
        signer,
        [
          "import { createPrivateKey } from 'node:crypto';",
          "import { readFileSync } from 'node:fs';",
          `import { approvalStatement, keyIdOf, signStatement } from ${JSON.stringify(join(ROOT, 'dist/authority/signing.js'))};`,
          `const key = createPrivateKey(readFileSync(${JSON.stringify(keyFile)}, 'utf8'));`,
          'const [sessionId, boundaryId, decision, fromDigest, toDigest, approvalRef, approvedBy, approvedAt] = process.argv.slice(2);',
          'const keyId = keyIdOf(key);',
          'const statement = approvalStatement({ sessionId, boundaryId, decision, fromDigest, toDigest, approvalRef, approvedBy, approvedAt, keyId });',
          "console.log(keyId + ' ' + signStatement(statement, key));",
        ].join('\n'),
      );
      serve = await startServe({
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: downstream.base },
        config: { correlation: { approverKeys: [publicKeyHex(privateKey)] } },
      });
    });

    let signerDir: string | undefined;
    let signer = '';

    afterAll(async () => {
      await serve?.stop();
      await downstream?.close();
      if (signerDir) rmSync(signerDir, { recursive: true, force: true });
    });

    /** Waits for the session's post span downstream and checks what the service wrote on it. */
    async function expectEnriched(session: string, state: ContinuityState, reason: string): Promise<void> {
      const post = await waitFor(`the enriched post span of ${session}`, () =>
        downstream.spans.find(
          (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_SESSION_ID] === session,
        ),
      );
      const pre = downstream.spans.find(
        (s) => s.span.name === SPAN_COMPACTION_PRE && s.attributes[ATTR_SESSION_ID] === session,
      );
      expect(pre).toBeDefined();
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe(state);
      expect(post.attributes[ATTR_CONTINUITY_ACTION]).toBe(ACTIONS[state]);
      expect(post.attributes[ATTR_CONTINUITY_REASON]).toBe(reason);
      expect(post.attributes[ATTR_CONTINUITY_PRIMARY_DECISION]).toBe('scope');
      expect(post.attributes[decisionAttr('scope', 'verdict')]).toBe(state);
      expect(post.attributes[decisionAttr('target', 'verdict')]).toBe('preserved');
      // The activity span sent just before the post is the session's activity.
      expect(post.attributes[ATTR_ACTIVITY_STATE]).toBe('working');
      expect(post.span.links.map((l) => l.spanId)).toEqual([pre!.span.spanId]);
      // One trace per boundary: the pre span its root, the post its child.
      expect(post.span.traceId).toBe(pre!.span.traceId);
      expect(pre!.span.parentSpanId).toBe('');
      expect(post.span.parentSpanId).toBe(pre!.span.spanId);
      expect(pre!.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
      // The resource the agent set arrives as it was sent.
      expect(post.resource['service.name']).toBe(RUNTIME);
    }

    /** Waits until /metrics counts exactly one boundary of `state` from the script's runtime. */
    async function expectCounted(state: ContinuityState, reason: string): Promise<void> {
      await waitFor(`one ${state} boundary on /metrics`, async () => {
        const samples = await scrape(serve.metrics);
        const labels = {
          [METRIC_ATTR_STATE]: state,
          [METRIC_ATTR_REASON]: reason,
          [METRIC_ATTR_RUNTIME]: RUNTIME,
          [METRIC_ATTR_TRIGGER]: 'auto',
          [METRIC_ATTR_PRIMARY_DECISION]: 'scope',
        };
        return total(samples, PROMETHEUS_NAMES[METRIC_BOUNDARIES], labels) === 1 &&
          total(samples, PROMETHEUS_NAMES[METRIC_SESSIONS], {
            [METRIC_ATTR_STATE]: state,
            [METRIC_ATTR_ACTIVITY]: 'working',
          }) === 1
          ? samples
          : undefined;
      });
    }

    it('sends an unchanged boundary; the post span arrives downstream preserved and is counted', async () => {
      const session = 'otlp-json-unchanged';
      const before = total(
        await scrape(serve.metrics),
        SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_RECEIVED],
      );
      const r = await run(SCRIPT, ['--session', session, '--endpoint', serve.otlp]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`${SPAN_COMPACTION_PRE}: sent (session ${session}`);
      expect(r.stdout).toContain(`${SPAN_COMPACTION_POST}: sent (session ${session}`);
      await expectEnriched(session, 'preserved', DECISION_REASONS.digestMatchFresh);
      await expectCounted('preserved', DECISION_REASONS.digestMatchFresh);
      // pre, then activity + post: three spans received.
      const after = total(
        await scrape(serve.metrics),
        SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_RECEIVED],
      );
      expect(after - before).toBe(3);
    });

    it('sends a widened scope nobody approved; the post span arrives conflicting', async () => {
      const session = 'otlp-json-changed';
      const r = await run(SCRIPT, [
        '--variant',
        'changed-scope',
        '--session',
        session,
        '--endpoint',
        serve.otlp,
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      await expectEnriched(session, 'conflicting', DECISION_REASONS.unapprovedChange);
      await expectCounted('conflicting', DECISION_REASONS.unapprovedChange);
    });

    it('sends the same change with an approval span; approved_change, endpoint from CONTINUITY_OTLP_ENDPOINT', async () => {
      const session = 'otlp-json-approved';
      // A base URL, as the Claude Code adapter takes it: the script appends /v1/traces.
      const r = await run(SCRIPT, ['--variant', 'approved-scope', '--session', session], {
        CONTINUITY_OTLP_ENDPOINT: serve.base,
        // The approval signed by the human's key, which serve trusts.
        CONTINUITY_APPROVAL_SIGNER: `${process.execPath} ${signer}`,
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`${SPAN_DECISION_APPROVAL}: sent`);
      await expectEnriched(session, 'approved_change', DECISION_REASONS.approvedChain);
      await expectCounted('approved_change', DECISION_REASONS.approvedChain);
      const approval = downstream.spans.find(
        (s) => s.span.name === SPAN_DECISION_APPROVAL && s.attributes[ATTR_SESSION_ID] === session,
      );
      expect(approval).toBeDefined();
    });

    it('exits 2 on a bad argument and 1 when nothing listens at the endpoint', async () => {
      const bad = await run(SCRIPT, ['--variant', 'sideways', '--endpoint', serve.otlp]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--variant');
      expect(bad.stdout).toBe('');
      const badSession = await run(SCRIPT, ['--session', 'a"b', '--endpoint', serve.otlp]);
      expect(badSession.code).toBe(2);
      expect(badSession.stderr).toContain('--session');

      // A port that was free a moment ago: the connection is refused.
      const down = await run(SCRIPT, ['--endpoint', await deadEndpoint()]);
      expect(down.code).toBe(1);
      expect(down.stderr).toContain('could not reach');
    });
  });
});
