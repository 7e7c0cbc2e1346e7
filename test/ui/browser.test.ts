/**
 * The continuity page in a real browser: Debian's Chromium driven by playwright-core against a
 * real `continuity serve` child process, fed with the six cases (OpenTelemetry JS spans over
 * OTLP/HTTP) and a live conflict recorded by the real CLI. A human then approves the changes with
 * the exact commands the page shows (`continuity approve` in another process) and the agents
 * re-observe: the needs-a-human list empties on the open page, without a reload.
 *
 * Screenshots of every state are kept as the run's artifacts outside the repository, in
 * `$CONTINUITY_UI_SCREENSHOTS` or else a fresh `continuity-ui-screenshots-*` directory under the
 * system's temporary directory (the test prints which, with the Chromium version); with
 * `CONTINUITY_UPDATE_SCREENSHOTS=1` the README's screenshot (`docs/images/continuity-page.png`) is
 * rewritten too.
 */

import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverDir, keyStoreFiles } from '../../src/authority/key-store.js';
import { formatRfc3339Utc } from '../../src/decision/time.js';
import { activityAttributes, approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_ACTIVITY, SPAN_COMPACTION_POST, SPAN_DECISION_APPROVAL } from '../../src/otel/semconv.js';
import { startServingDemo } from '../demo/harness.js';
import { type ServeProcess, startServe } from '../service/harness.js';
import { expectedStates, loadSixCases, type SentCase, sendSixCases } from '../service/six-cases.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';
import { type Browser, ensureBrowser, launchChromium, type Page } from '../support/browser.js';
import { atTerminal, ensureTerminalTools, HUMAN_PASSPHRASE, withApproverKey } from '../support/human.js';
import { BIN } from '../support/world.js';
import {
  cli,
  type LiveBoundary,
  makePlace,
  type Place,
  pageCommandArgv,
  recordLiveBoundary,
  runCli,
  sendSpans,
} from './harness.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const README_SHOT = join(ROOT, 'docs', 'images', 'continuity-page.png');

/** The Okabe–Ito palette, the colour-blind-safe set the states must be drawn from. */
const OKABE_ITO = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#000000'];

const LIVE_SESSION = 'live-conflict-1';
const LIVE_PRE = {
  scope: { repository: 'acme/payments', paths: ['services/ledger'] },
  target: 'release/2.4',
  acceptance_test: { command: 'npm test -- ledger', must_pass: true },
};
const LIVE_POST = {
  ...LIVE_PRE,
  scope: { repository: 'acme/payments', paths: ['services/ledger', 'services/api'] },
};

const key = (sessionId: string) => createHash('sha256').update(sessionId).digest('hex').slice(0, 16);

/**
 * A human runs `continuity approve` (the page's command) in their own terminal: the approval is
 * signed with their key, its passphrase typed at the prompt (../support/human.ts).
 */
async function approveAtTerminal(place: Place, env: NodeJS.ProcessEnv, args: string[]): Promise<void> {
  const r = await atTerminal(process.execPath, [BIN, ...args], {
    env: withApproverKey(env, place.dir),
    cwd: place.dir,
  });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toContain('approval recorded');
}

function rgb(hex: string): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgb(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255})`;
}

/** WCAG relative luminance contrast of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = (c.match(/\d+/g) ?? []).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

let place: Place;
/** Where this run keeps its screenshots (printed). */
let shots: string;
let serve: ServeProcess;
let browser: Browser;
let sent: SentCase[];
let live: LiveBoundary;
const expected = expectedStates();

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function open(path: string): Promise<Page> {
  const page = await browser.context.newPage();
  const res = await page.goto(`${serve.base}${path}`);
  expect(res?.status(), path).toBe(200);
  return page;
}

beforeAll(async () => {
  await ensureBrowser();
  await ensureTerminalTools();
  place = makePlace('ui-browser-');
  // The human's approver key (its passphrase typed at a terminal when they approve): the serve
  // trusts it, beside the key the six cases' spans are signed with.
  const humanKey = keyStoreFiles(approverDir(withApproverKey(place.env({}), place.dir))).publicKey;
  serve = await startServe({
    dir: place.dir,
    // Long post windows: the human's approval and the re-observation come minutes later.
    config: {
      correlation: {
        postWindows: { sdk: '30m', 'claude-code': '30m' },
        approverKeys: [SERVICE_TEST_APPROVER.publicKeyHex, humanKey],
      },
      ui: { traceLink: { jaeger: 'http://127.0.0.1:16686' }, ledger: place.ledger },
    },
  });
  sent = await sendSixCases(new OTLPTraceExporter({ url: serve.otlp }), 'six');
  const activity = ['idle', 'working', 'working', 'waiting_human', 'working', 'working'] as const;
  await sendSpans(
    serve.otlp,
    sent.map((c, i) => ({ name: SPAN_ACTIVITY, attributes: activityAttributes(c.sessionId, activity[i]!) })),
  );
  live = await recordLiveBoundary(place, serve.base, LIVE_SESSION, LIVE_PRE, LIVE_POST);
  // A compaction whose decisions have not been restated yet: pending.
  await cli(place, serve.base, [
    'snapshot',
    '--session',
    'pending-1',
    '--phase',
    'pre',
    '--runtime',
    'claude-code',
    '--decisions',
    live.preFile,
  ]);
  // A session only the ledger knows: recorded with span export off.
  for (const phase of ['pre', 'post']) {
    const r = await runCli(
      [
        'snapshot',
        '--session',
        'ledger-only-1',
        '--phase',
        phase,
        '--runtime',
        'codex-cli',
        '--decisions',
        live.preFile,
      ],
      { env: place.env({ CONTINUITY_EXPORT: 'off' }), cwd: place.dir },
    );
    expect(r.status, r.stderr).toBe(0);
  }
  browser = await launchChromium();
  const dir = process.env.CONTINUITY_UI_SCREENSHOTS;
  if (dir) mkdirSync(dir, { recursive: true });
  shots = dir ?? mkdtempSync(join(tmpdir(), 'continuity-ui-screenshots-'));
  writeFileSync(join(shots, 'versions.txt'), `chromium ${browser.version}\n`);
  console.log(`continuity page screenshots (Chromium ${browser.version}): ${shots}`);
}, 20 * 60_000);

afterAll(async () => {
  await browser?.close();
  await serve?.stop();
  place?.dispose();
});

describe('the continuity page in Chromium', () => {
  it('lists every session with its state and activity side by side, those needing a human first', async () => {
    const page = await open('/ui');
    await page.waitForSelector(`tr[data-session-key="${key(LIVE_SESSION)}"]`);
    const rows = await page.$$eval('#sessions tbody tr', (trs) =>
      trs.map((tr) => ({
        key: tr.getAttribute('data-session-key'),
        state: tr.querySelector('.badge[data-state]')?.getAttribute('data-state'),
        stateText: tr.querySelector('.badge[data-state]')?.textContent,
        activity: tr.querySelector('.badge[data-activity]')?.getAttribute('data-activity'),
        activityCell: tr.querySelector('.badge[data-activity]')?.closest('td')?.cellIndex,
        stateCell: tr.querySelector('.badge[data-state]')?.closest('td')?.cellIndex,
        seenIn: (tr as HTMLTableRowElement).cells[6]?.textContent,
      })),
    );
    expect(rows).toHaveLength(9);
    const byKey = new Map(rows.map((r) => [r.key, r]));
    for (const c of sent) {
      const r = byKey.get(key(c.sessionId));
      expect(r?.state, c.caseId).toBe(expected.get(c.caseId));
      expect(r?.stateText).toContain(expected.get(c.caseId));
      // Activity in its own cell, beside the state, never merged into it.
      expect(r?.activityCell).toBe((r?.stateCell ?? 0) + 1);
    }
    expect(byKey.get(key(sent[4]!.sessionId))?.activity).toBe('working');
    expect(byKey.get(key(sent[3]!.sessionId))?.activity).toBe('waiting_human');
    expect(byKey.get(key(LIVE_SESSION))?.state).toBe('conflicting');
    expect(byKey.get(key('pending-1'))?.state).toBe('pending');
    // The sources: spans only, spans and the ledger, the ledger only.
    expect(byKey.get(key(sent[0]!.sessionId))?.seenIn).toBe('spans');
    expect(byKey.get(key(LIVE_SESSION))?.seenIn).toBe('spans + ledger');
    expect(byKey.get(key('ledger-only-1'))).toMatchObject({ state: 'preserved', seenIn: 'ledger' });
    // Needs a human first: the conflicting and dropped sessions lead the table.
    expect(rows.slice(0, 3).map((r) => r.state)).toEqual(['conflicting', 'conflicting', 'dropped']);
    const cards = await page.$$eval('#needs-human li.card', (lis) =>
      lis.map((li) => li.getAttribute('data-session-key')),
    );
    expect(new Set(cards)).toEqual(
      new Set([key(LIVE_SESSION), key(sent[4]!.sessionId), key(sent[3]!.sessionId)]),
    );
    expect(await page.textContent('[data-count="needs-human"]')).toBe('3');
    await shot(page, 'overview-needs-human');
    if (process.env.CONTINUITY_UPDATE_SCREENSHOTS === '1') {
      mkdirSync(join(ROOT, 'docs', 'images'), { recursive: true });
      await page.screenshot({ path: README_SHOT, fullPage: true });
    }
    await page.close();
  });

  it('shows per session its boundaries, verdicts with reasons, the approval chain, evidence and the next step', async () => {
    const cases = loadSixCases();
    const jaeger = /^http:\/\/127\.0\.0\.1:16686\/trace\/[0-9a-f]{32}\?uiFind=[0-9a-f]{16}$/;

    // approved_change: the chain of refs and who approved.
    let page = await open(`/ui/session?key=${key(sent[2]!.sessionId)}`);
    const approval = cases[2]!.approvals[0]!;
    expect(await page.textContent('#session-h')).toContain('approved_change');
    const chain = await page.textContent('table.decisions tr[data-decision="acceptance_test"]');
    expect(chain).toContain('approved_chain');
    expect(chain).toContain(approval.approvalRef);
    const approvals = await page.textContent('table.approvals');
    expect(approvals).toContain(approval.approvedBy);
    expect(approvals).toContain(approval.fromDigest);
    expect(approvals).toContain(approval.toDigest);
    for (const href of await page.$$eval('.traces a', (as) => as.map((a) => a.getAttribute('href'))))
      expect(href).toMatch(jaeger);
    await shot(page, 'state-approved_change');
    await page.close();

    // conflicting, from spans only, recorded by the SDK extension: this machine's ledger has no
    // pre snapshot of the session, so `continuity approve` here would be refused; the page gives
    // the app's own calls, and says nothing blocks writes (an SDK session has no gate). The live
    // conflict below, which the ledger holds, gets the CLI's approve command.
    page = await open(`/ui/session?key=${key(sent[4]!.sessionId)}`);
    const commands = await page.$$eval('.step pre', (ps) => ps.map((p) => p.textContent));
    expect(commands.some((c) => c?.startsWith('continuity approve'))).toBe(false);
    expect(commands[0]).toMatch(
      /^await continuity\.recordApproval\("six-case-5-conflicting-scope", \{ decision: "scope", fromDigest: "sha256:/,
    );
    expect(commands[1]).toMatch(/^await continuity\.observePost\("six-case-5-conflicting-scope", \{ /);
    expect(await page.textContent('.step')).toContain("Nothing blocks the agent's writes for runtime sdk");
    expect(await page.textContent('.step')).not.toContain('Writes are blocked');
    expect(await page.textContent('table.decisions tr[data-decision="scope"]')).toContain(
      'unapproved_change',
    );
    await shot(page, 'state-conflicting');
    await page.close();

    // dropped, unverified (stale), preserved: reason codes and the restatement command.
    for (const [i, state, reason] of [
      [3, 'dropped', 'absent_after_compaction'],
      [5, 'unverified', 'stale_observation'],
      [0, 'preserved', 'digest_match_fresh'],
    ] as const) {
      page = await open(`/ui/session?key=${key(sent[i]!.sessionId)}`);
      expect(await page.textContent('#session-h')).toContain(state);
      expect(await page.textContent('.timeline')).toContain(reason);
      const step = await page.textContent('.step');
      if (state === 'preserved') expect(step).toContain('Nothing to do');
      else expect(step).toContain(`await continuity.observePost("${sent[i]!.sessionId}"`);
      await shot(page, `state-${state}`);
      await page.close();
    }

    // pending: waiting for the restatement, with the window it has.
    page = await open(`/ui/session?key=${key('pending-1')}`);
    expect(await page.textContent('.boundary[data-pending="true"]')).toContain(
      'Waiting for its post observation',
    );
    await shot(page, 'state-pending');
    await page.close();
  });

  it('draws states in Okabe–Ito colours with their names, and activity outlined apart', async () => {
    const page = await open('/ui');
    const badges = await page.$$eval('.badge[data-state]', (els) =>
      els.map((el) => ({
        state: el.getAttribute('data-state')!,
        text: el.textContent ?? '',
        fill: getComputedStyle(el).backgroundColor,
        color: getComputedStyle(el).color,
      })),
    );
    const palette = new Set(OKABE_ITO.map(rgb));
    const fills = new Map<string, string>();
    for (const b of badges) {
      expect(b.text, b.state).toContain(b.state);
      expect(palette.has(b.fill), `${b.state} ${b.fill}`).toBe(true);
      expect(contrast(b.fill, b.color), b.state).toBeGreaterThanOrEqual(4.5);
      fills.set(b.state, b.fill);
    }
    // The five states and pending, each its own colour.
    expect(fills.size).toBe(6);
    expect(new Set(fills.values()).size).toBe(6);
    const activity = await page.$$eval('.badge[data-activity]', (els) =>
      els.map((el) => ({
        text: el.textContent ?? '',
        a: el.getAttribute('data-activity')!,
        fill: getComputedStyle(el).backgroundColor,
      })),
    );
    expect(activity.length).toBeGreaterThan(0);
    for (const a of activity) {
      expect(a.text).toContain(a.a);
      expect(palette.has(a.fill)).toBe(false);
    }
    await page.close();
  });

  it('is keyboard navigable: every link and button in tab order, focus visible, actions work', async () => {
    const origin = serve.base;
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await open('/ui');
    await page.waitForFunction(() => document.querySelector('button.copy:not([hidden])') !== null);
    const total = await page.evaluate(() => {
      const els = [
        ...document.querySelectorAll<HTMLElement>('a[href], button:not([hidden]), input, select, textarea'),
      ];
      els.forEach((el, i) => {
        el.dataset.t = String(i);
      });
      return els.length;
    });
    expect(total).toBeGreaterThan(10);
    const seen: Array<{ t: string | undefined; outline: string; width: number }> = [];
    for (let i = 0; i < total; i++) {
      await page.keyboard.press('Tab');
      seen.push(
        await page.evaluate(() => {
          const el = document.activeElement as HTMLElement;
          const s = getComputedStyle(el);
          return { t: el.dataset.t, outline: s.outlineStyle, width: Number.parseFloat(s.outlineWidth) };
        }),
      );
    }
    expect(seen.map((s) => s.t)).toEqual([...Array(total).keys()].map(String));
    for (const s of seen) {
      expect(s.outline).toBe('solid');
      expect(s.width).toBeGreaterThanOrEqual(3);
    }
    // The skip link moves focus to the content.
    await page.keyboard.press('Shift+Tab');
    await page.focus('a.skip');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // A copy button copies the exact command.
    await page.focus(`li.card[data-session-key="${key(LIVE_SESSION)}"] button.copy`);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.textContent === 'Copied');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toMatch(
      /^continuity approve --session live-conflict-1 --decision scope --from-digest sha256:/,
    );
    // A session link opens the session page.
    await page.focus(`#sessions a[href="/ui/session?key=${key(LIVE_SESSION)}"]`);
    await shot(page, 'keyboard-focus');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/ui\/session\?key=/);
    expect(await page.textContent('#session-h')).toContain(LIVE_SESSION);
    await page.close();
  });

  it('filters the sessions by continuity state and by runtime, and the live updates keep the filter', async () => {
    const page = await open('/ui');
    await page.selectOption('#filter-state', 'conflicting');
    await Promise.all([
      page.waitForURL(/\/ui\?state=conflicting/),
      page.click('form.filter button[type="submit"]'),
    ]);
    const states = await page.$$eval('#sessions tbody tr', (trs) =>
      trs.map((tr) => tr.getAttribute('data-state')),
    );
    expect(states.length).toBeGreaterThan(0);
    expect(new Set(states)).toEqual(new Set(['conflicting']));
    expect(await page.getAttribute('main', 'data-fragment')).toBe('/ui/fragment/overview?state=conflicting');
    expect(await page.textContent('#sessions caption')).toContain('shown (filtered)');
    // Both filters: the SDK's conflicts only (the six cases' runtime), none of the CLI's.
    await page.selectOption('#filter-runtime', 'sdk');
    await Promise.all([page.waitForURL(/runtime=sdk/), page.click('form.filter button[type="submit"]')]);
    const keys = await page.$$eval('#sessions tbody tr', (trs) =>
      trs.map((tr) => tr.getAttribute('data-session-key')),
    );
    expect(keys).toEqual([key(sent[4]!.sessionId)]);
    await page.click('form.filter a');
    await page.waitForURL(/\/ui$/);
    expect(await page.$$eval('#sessions tbody tr', (trs) => trs.length)).toBeGreaterThan(keys.length);
    await page.close();
  });

  it('works with JavaScript disabled (server-rendered, no copy buttons)', async () => {
    const noJs = await launchChromium({ javaScriptEnabled: false });
    try {
      const page = await noJs.context.newPage();
      await page.goto(`${serve.base}/ui`);
      expect(await page.$$eval('#sessions tbody tr', (trs) => trs.length)).toBe(9);
      expect(await page.$$eval('#needs-human li.card', (lis) => lis.length)).toBe(3);
      expect(await page.$$eval('button.copy:not([hidden])', (bs) => bs.length)).toBe(0);
      expect(await page.textContent('#live-status')).toContain('reload');
      await page.goto(`${serve.base}/ui/session?key=${key(LIVE_SESSION)}`);
      expect(await page.textContent('.step pre')).toContain('continuity approve --session live-conflict-1');
      await shot(page, 'no-javascript-session');
    } finally {
      await noJs.close();
    }
  });

  it('empties the needs-a-human list live, without a reload, after the humans approve and the agents re-observe', async () => {
    const page = await open('/ui');
    await page.waitForFunction(() => document.getElementById('live-status')?.textContent?.startsWith('live'));
    await page.evaluate(() => {
      (window as unknown as { sameDocument: boolean }).sameDocument = true;
    });
    const commandOf = (k: string) => page.textContent(`li.card[data-session-key="${k}"] .cmd pre`);

    // The live conflict: the page's own approve command, run by a human in another process…
    const liveCommand = (await commandOf(key(LIVE_SESSION)))!;
    await approveAtTerminal(
      place,
      place.env({ CONTINUITY_OTLP_ENDPOINT: serve.base }),
      pageCommandArgv(liveCommand, { '<ticket-or-note-id>': 'CHG-42', '<your-id>': 'reviewer-7' }),
    );
    // …and the agent's re-observation.
    await cli(place, serve.base, [
      'snapshot',
      '--session',
      LIVE_SESSION,
      '--phase',
      'post',
      '--decisions',
      live.postFile,
    ]);
    await page.waitForFunction(
      (k) => !document.querySelector(`li.card[data-session-key="${k}"]`),
      key(LIVE_SESSION),
    );
    expect(await page.textContent('[data-count="needs-human"]')).toBe('2');

    // The six-case conflict (spans only): approved where its agent records, as the SDK's
    // recordApproval exports it (an approval span), then the post observed again.
    const cases = loadSixCases();
    await sendSpans(serve.otlp, [
      {
        name: SPAN_DECISION_APPROVAL,
        attributes: approvalAttributes(
          sent[4]!.sessionId,
          SERVICE_TEST_APPROVER.sign(
            {
              decision: 'scope',
              fromDigest: cases[4]!.pre!.decisions.scope!.digest,
              toDigest: cases[4]!.post!.decisions.scope!.digest,
              approvalRef: 'CHG-43',
              approvedBy: 'reviewer-7',
              approvedAt: formatRfc3339Utc(Date.now()),
            },
            sent[4]!.sessionId,
            sent[4]!.boundaryId,
          ),
        ),
      },
    ]);
    const boundary = (c: SentCase) => ({ boundaryId: c.boundaryId, runtime: 'sdk' });
    await sendSpans(serve.otlp, [
      {
        name: SPAN_COMPACTION_POST,
        attributes: snapshotAttributes(
          'post',
          { ...cases[4]!.post!, sessionId: sent[4]!.sessionId },
          boundary(sent[4]!),
        ),
      },
    ]);
    // The dropped decision: the agent restates all three, freshly.
    const now = formatRfc3339Utc(Date.now());
    const restated = Object.fromEntries(
      Object.entries(cases[3]!.pre!.decisions).map(([n, d]) => [n, { ...d, observedAt: now }]),
    );
    await sendSpans(serve.otlp, [
      {
        name: SPAN_COMPACTION_POST,
        attributes: snapshotAttributes(
          'post',
          { ...cases[3]!.pre!, sessionId: sent[3]!.sessionId, capturedAt: now, decisions: restated },
          boundary(sent[3]!),
        ),
      },
    ]);

    await page.waitForSelector('[data-empty="needs-human"]', { timeout: 20_000 });
    expect(await page.textContent('[data-count="needs-human"]')).toBe('0');
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(
      true,
    );
    expect(await page.title()).toContain('0 need a human');
    const states = await page.$$eval('#sessions tbody tr', (trs) =>
      Object.fromEntries(
        trs.map((tr) => [tr.getAttribute('data-session-key'), tr.getAttribute('data-state')]),
      ),
    );
    expect(states[key(LIVE_SESSION)]).toBe('approved_change');
    expect(states[key(sent[4]!.sessionId)]).toBe('approved_change');
    expect(states[key(sent[3]!.sessionId)]).toBe('preserved');
    await shot(page, 'overview-after-approval');
    await page.close();

    // The live session's boundary over time: conflicting, then approved_change through CHG-42.
    const detail = await open(`/ui/session?key=${key(LIVE_SESSION)}`);
    const timeline = await detail.$$eval('.timeline > li', (lis) =>
      lis.map((li) => li.getAttribute('data-state')),
    );
    expect(timeline).toEqual(['approved_change', 'conflicting']);
    const approvals = await detail.textContent('table.approvals');
    expect(approvals).toContain('CHG-42');
    expect(approvals).toContain('reviewer-7');
    expect(await detail.textContent('table.decisions tr[data-decision="scope"]')).toContain('CHG-42');
    // The ledger's own record of the boundary agrees, recomputed from its evidence.
    const ledger = await detail.textContent('#ledger');
    expect(ledger).toContain('approved_change');
    expect(ledger).toContain(live.boundaryId);
    expect(await detail.textContent('#ledger table.approvals')).toContain('CHG-42');
    await shot(detail, 'session-approved-live');
    await detail.close();
  });
  it('shows a boundary only the ledger records, live, and clears it when the approval is recorded', async () => {
    const page = await open('/ui');
    await page.waitForFunction(() => document.getElementById('live-status')?.textContent?.startsWith('live'));
    const offline = place.env({ CONTINUITY_EXPORT: 'off' });
    const run = async (args: string[]) => {
      const r = await runCli(args, { env: offline, cwd: place.dir });
      expect(r.status, r.stderr).toBe(0);
    };
    const session = 'ledger-conflict-1';
    await run([
      'snapshot',
      '--session',
      session,
      '--phase',
      'pre',
      '--runtime',
      'codex-cli',
      '--decisions',
      live.preFile,
    ]);
    await run(['snapshot', '--session', session, '--phase', 'post', '--decisions', live.postFile]);
    const card = `li.card[data-session-key="${key(session)}"]`;
    await page.waitForSelector(card, { timeout: 20_000 });
    const command = (await page.textContent(`${card} .cmd pre`))!;
    expect(command).toMatch(
      /^continuity approve --session ledger-conflict-1 --decision scope --from-digest sha256:/,
    );
    await approveAtTerminal(
      place,
      offline,
      pageCommandArgv(command, { '<ticket-or-note-id>': 'CHG-44', '<your-id>': 'reviewer-7' }),
    );
    await page.waitForSelector(card, { state: 'detached', timeout: 20_000 });
    const row = `#sessions tr[data-session-key="${key(session)}"]`;
    expect(await page.getAttribute(row, 'data-state')).toBe('approved_change');
    expect(await page.textContent(row)).toContain('ledger');
    await page.close();
  });
});

describe('the continuity page behind a bearer token', () => {
  let guarded: ServeProcess;
  const token = 'page-test-token-0123456789abcdef';

  beforeAll(async () => {
    guarded = await startServe({ config: { server: { bearerToken: token }, ui: { ledger: false } } });
  });
  afterAll(async () => {
    await guarded?.stop();
  });

  it('asks for the token in a form a keyboard can fill, then shows the page', async () => {
    const page = await browser.context.newPage();
    const res = await page.goto(`${guarded.base}/ui`);
    expect(res?.status()).toBe(401);
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.id === 'token')) break;
    }
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('token');
    await page.keyboard.type('not-the-token-at-all-0000');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="alert"]');
    await shot(page, 'sign-in-refused');
    await page.focus('#token');
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#sessions');
    expect(page.url()).toBe(`${guarded.base}/ui`);
    expect(await page.textContent('#sessions')).toContain('No compaction boundary seen yet');
    await page.close();
  });
});

describe('npm run demo -- --serve in Chromium', () => {
  it('shows the six cases, the conflicting and the dropped one needing a human, each with its command; the signed approval call, run as the page says, resolves the conflict', async () => {
    await ensureTerminalTools();
    // The human: an approver key store (as `continuity key init` makes it) in their own
    // configuration directory; the demo is told to trust its public key, and only that.
    const home = mkdtempSync(join(tmpdir(), 'continuity-demo-human-'));
    const human = withApproverKey({ ...process.env, XDG_CONFIG_HOME: undefined }, home);
    const publicKey = keyStoreFiles(approverDir(human)).publicKey;
    const demo = await startServingDemo(['--approver-key', publicKey]);
    try {
      expect(demo.stdout()).toMatch(/Approvals signed by ed25519:[0-9a-f]{32} \(--approver-key\) count here/);
      const page = await browser.context.newPage();
      const res = await page.goto(demo.pageUrl);
      expect(res?.status()).toBe(200);
      const rows = await page.$$eval('#sessions tbody tr', (trs) =>
        trs.map((tr) => [tr.getAttribute('data-session-key'), tr.getAttribute('data-state')]),
      );
      const cases = loadSixCases();
      expect(Object.fromEntries(rows)).toEqual(
        Object.fromEntries(cases.map((c) => [key(c.id), expected.get(c.id)])),
      );
      const cards = await page.$$eval('#needs-human li.card', (lis) =>
        lis.map((li) => ({
          key: li.getAttribute('data-session-key') ?? '',
          commands: [...li.querySelectorAll('.cmd pre')].map((p) => p.textContent ?? ''),
          text: li.textContent ?? '',
        })),
      );
      expect(cards).toHaveLength(2);
      // The demo's sessions are the SDK extension's, in spans only (the demo reads no ledger): the
      // commands are the app's calls, the approval signed by the human's key, and nothing claims
      // the agent's writes are blocked.
      const conflict = cards.find((c) =>
        c.commands[0]?.startsWith('await continuity.recordApproval("case-5-conflicting-scope", '),
      );
      expect(conflict?.commands[1]).toMatch(/^await continuity\.observePost\("case-5-conflicting-scope", /);
      expect(conflict?.text).toContain(
        'approverSigner, from agent-continuity, asks your approver passphrase',
      );
      expect(
        cards.some((c) =>
          c.commands[0]?.startsWith('await continuity.observePost("case-4-dropped-approval-boundary"'),
        ),
      ).toBe(true);
      const needsHuman = (await page.textContent('#needs-human')) ?? '';
      expect(needsHuman).toContain("Nothing blocks the agent's writes for runtime sdk");
      expect(needsHuman).not.toMatch(/writes are blocked|write gate refuses/i);
      // Never a key or a passphrase on the page.
      const html = await page.evaluate(() => document.documentElement.outerHTML);
      expect(html).not.toContain(HUMAN_PASSPHRASE);
      expect(html).not.toContain('PRIVATE KEY');

      // The conflict's commands, run for real as the app runs them: the human's approval (the
      // placeholders filled in), signed by approverSigner with the passphrase typed at the app's
      // terminal, then the agent's restatement of what it now holds (the digests after
      // compaction, as the page lists them), exported to the demo's service.
      const base = demo.pageUrl.replace(/\/ui$/, '');
      const detail = (await (await fetch(`${base}/ui/api/session?key=${conflict!.key}`)).json()) as {
        boundaries: Array<{
          boundaryId: string;
          resolutions: Array<{ decisions: Array<{ name: string; postDigest: string }> }>;
        }>;
      };
      expect(conflict!.commands[0]).toContain(
        `signer: await approverSigner(${JSON.stringify(detail.boundaries[0]!.boundaryId)}) });`,
      );
      const after = new Map(
        detail.boundaries[0]!.resolutions[0]!.decisions.map((d) => [d.name, d.postDigest]),
      );
      const approve = conflict!.commands[0]!.replace('<ticket-or-note-id>', 'CHG-7').replace(
        '<your-id>',
        'reviewer-1',
      );
      const restate = conflict!.commands[1]!.replace(
        /([a-z_][a-z0-9_.]*): \{ value: <value> \}/g,
        (_, name: string) => `${name}: { digest: ${JSON.stringify(after.get(name))} }`,
      );
      expect(restate).not.toContain('<value>');
      const script = [
        "import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';",
        "import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';",
        "import { approverSigner, createContinuity } from 'agent-continuity';",
        `const exporter = new OTLPTraceExporter({ url: ${JSON.stringify(`${base}/v1/traces`)} });`,
        'const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });',
        'const problems = [];',
        "const continuity = createContinuity({ runtime: 'sdk', tracer: provider.getTracer('app'), onProblem: (p) => problems.push(p.reason) });",
        approve,
        restate,
        'await provider.forceFlush();',
        'await provider.shutdown();',
        'if (problems.length > 0) { console.log("problems: " + problems.join(", ")); process.exit(1); }',
        "console.log('recorded');",
      ].join('\n');
      const ran = await atTerminal(process.execPath, ['--input-type=module', '-e', script], {
        env: human,
        cwd: ROOT,
      });
      expect(ran.status, ran.stdout + ran.stderr).toBe(0);
      // The prompt showed the boundary before the passphrase was asked; the passphrase never echoed.
      expect(ran.stdout).toContain(`Approving a change of boundary ${detail.boundaries[0]!.boundaryId}`);
      expect(ran.stdout).toContain('recorded');
      expect(ran.stdout).not.toContain(HUMAN_PASSPHRASE);
      await page.waitForFunction(
        (k) =>
          document.querySelector(`#sessions tr[data-session-key="${k}"]`)?.getAttribute('data-state') ===
          'approved_change',
        conflict!.key,
        { timeout: 20_000 },
      );
      await shot(page, 'demo-six-cases');
      await page.close();
    } finally {
      expect(await demo.stop()).toBe(0);
      rmSync(home, { recursive: true, force: true });
    }
  });
});
