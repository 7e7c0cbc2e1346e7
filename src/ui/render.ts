/**
 * Server-rendered HTML of the continuity page: complete pages that work with JavaScript disabled,
 * and the `<main>` fragments the live script swaps in. Every dynamic string is escaped; what is
 * printed comes from the model (digests, ids, names, codes, times and our own words).
 */
import { ACTIONS, CONTINUITY_STATES } from '../classify/states.js';
import type {
  ApprovalRow,
  BoundaryRow,
  DecisionRow,
  LedgerBoundaryRow,
  Overview,
  ResolutionRow,
  RowState,
  SessionDetail,
  SessionRow,
  TraceLink,
} from './model.js';
import type { NextStep } from './next-step.js';
import { ACTIVITY_SYMBOL, STATE_STYLE } from './style.js';

/** The page's paths, defined once. */
export const UI_PATHS = {
  root: '/ui',
  session: '/ui/session',
  css: '/ui/page.css',
  icon: '/ui/favicon.svg',
  script: '/ui/live.js',
  events: '/ui/events',
  login: '/ui/login',
  overviewJson: '/ui/api/overview',
  sessionJson: '/ui/api/session',
  overviewFragment: '/ui/fragment/overview',
  sessionFragment: '/ui/fragment/session',
} as const;

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for HTML content and quoted attribute values. */
export function esc(text: string | number): string {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function time(iso: string): string {
  return `<time datetime="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>`;
}

/**
 * A duration in seconds as a person reads it: `259 µs`, `42 ms`, `1.5 s`, `42 s`, `4 min 05 s`,
 * `2 h 03 min`. Not `0.000259072 s`.
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '-';
  if (seconds < 1e-3) return `${Math.max(1, Math.round(seconds * 1e6))} µs`;
  if (seconds < 1) return `${Math.round(seconds * 1e3)} ms`;
  if (seconds < 9.95) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min ${String(whole % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** A state badge: fill, symbol and the state's name as text. */
export function stateBadge(state: string): string {
  const style = STATE_STYLE[state as RowState];
  const symbol = style ? `<span class="sym" aria-hidden="true">${style.symbol}</span>` : '';
  return `<span class="badge state-${esc(state)}" data-state="${esc(state)}">${symbol}${esc(state)}</span>`;
}

/** An activity badge: outlined, never a state colour. */
export function activityBadge(activity: string): string {
  const symbol = ACTIVITY_SYMBOL[activity] ?? ACTIVITY_SYMBOL.unknown!;
  return `<span class="badge activity" data-activity="${esc(activity)}"><span class="sym" aria-hidden="true">${symbol}</span>${esc(activity)}</span>`;
}

function sessionHref(key: string): string {
  return `${UI_PATHS.session}?key=${esc(key)}`;
}

function commands(step: NextStep, idPrefix: string): string {
  return step.commands
    .map((c, i) => {
      const id = `cmd-${idPrefix}-${i + 1}`;
      return `<div class="cmd"><span class="label">${esc(c.label)}</span><button type="button" class="copy" data-copy="${id}" hidden>Copy command</button><pre id="${id}"><code>${esc(c.command)}</code></pre></div>`;
    })
    .join('');
}

function stepHtml(step: NextStep, idPrefix: string): string {
  const who = { nobody: 'Nothing to do', agent: 'The agent acts', human: 'A human acts' }[step.actor];
  return `<div class="step" data-actor="${step.actor}"><p><span class="actor">${who}.</span> ${esc(step.text)}</p>${commands(step, idPrefix)}</div>`;
}

function needsHumanCard(r: SessionRow): string {
  return `<li class="card state-${esc(r.state)}" data-session-key="${esc(r.key)}">
<h3><a href="${sessionHref(r.key)}">${esc(r.sessionId)}</a> ${stateBadge(r.state)} ${activityBadge(r.activity)}</h3>
<p class="muted">decision <code>${esc(r.primaryDecision ?? '-')}</code> · reason <code>${esc(r.reason ?? '-')}</code>${r.runtime ? ` · runtime ${esc(r.runtime)}` : ''} · last seen ${time(r.lastSeenAt)}</p>
${stepHtml(r.nextStep, r.key)}</li>`;
}

const SOURCE_TEXT: Readonly<Record<SessionRow['source'], string>> = {
  service: 'spans',
  ledger: 'ledger',
  both: 'spans + ledger',
};

function sessionRow(r: SessionRow): string {
  return `<tr data-session-key="${esc(r.key)}" data-state="${esc(r.state)}">
<th scope="row"><a href="${sessionHref(r.key)}">${esc(r.sessionId)}</a></th>
<td>${stateBadge(r.state)}</td><td>${activityBadge(r.activity)}</td>
<td><code>${esc(r.primaryDecision ?? '-')}</code></td><td><code>${esc(r.reason ?? '-')}</code></td>
<td>${esc(r.runtime ?? '-')}</td><td>${esc(SOURCE_TEXT[r.source])}</td><td>${time(r.lastSeenAt)}</td></tr>`;
}

function legend(): string {
  const items = CONTINUITY_STATES.map(
    (s) => `<li>${stateBadge(s)} <span class="muted">→ <code>${esc(ACTIONS[s])}</code></span></li>`,
  );
  items.push(`<li>${stateBadge('pending')} <span class="muted">→ waiting for the restatement</span></li>`);
  return `<ul class="legend" aria-label="States and their actions">${items.join('')}</ul>`;
}

function option(value: string, text: string, selected: string | null): string {
  return `<option value="${esc(value)}"${selected === value || (value === '' && selected === null) ? ' selected' : ''}>${esc(text)}</option>`;
}

/** The filter form: a plain GET form, so it works without JavaScript and the URL can be shared. */
function filterForm(o: Overview): string {
  const states = ['', ...CONTINUITY_STATES, 'pending'].map((s) =>
    option(s, s || 'every state', o.filter.state),
  );
  const runtimes = ['', ...o.runtimes].map((r) => option(r, r || 'every runtime', o.filter.runtime));
  if (o.filter.runtime && !o.runtimes.includes(o.filter.runtime))
    runtimes.push(option(o.filter.runtime, o.filter.runtime, o.filter.runtime));
  return `<form class="filter" method="get" action="${UI_PATHS.root}" aria-label="Filter the sessions">
<label for="filter-state">Continuity</label> <select id="filter-state" name="state">${states.join('')}</select>
<label for="filter-runtime">Runtime</label> <select id="filter-runtime" name="runtime">${runtimes.join('')}</select>
<button type="submit">Filter</button>${o.filter.state || o.filter.runtime ? ` <a href="${UI_PATHS.root}">Show all</a>` : ''}</form>`;
}

/** The overview's `<main>` content. */
export function overviewMain(o: Overview): string {
  const needs =
    o.needsHuman.length === 0
      ? '<p class="empty" data-empty="needs-human">No session needs a human right now.</p>'
      : `<ul class="cards">${o.needsHuman.map(needsHumanCard).join('')}</ul>`;
  const counts = CONTINUITY_STATES.map((s) => `${o.counts.byState[s]} ${s}`).join(', ');
  const filtered = o.filter.state !== null || o.filter.runtime !== null;
  const shown = filtered ? ` ${o.sessions.length} shown (filtered).` : '';
  const table =
    o.sessions.length === 0
      ? filtered
        ? `<p class="empty" data-empty="filtered">No session matches the filter (${o.counts.sessions} sessions in all).</p>`
        : '<p class="empty">No compaction boundary seen yet. Point your agent\'s OTLP exporter (or CONTINUITY_OTLP_ENDPOINT for the hooks) at this service.</p>'
      : `<table><caption class="muted">${o.counts.sessions} sessions: ${esc(counts)}, ${o.counts.pending} pending.${shown} Continuity state and activity are separate columns.</caption>
<thead><tr><th scope="col">Session</th><th scope="col">Continuity</th><th scope="col">Activity</th><th scope="col">Decision</th><th scope="col">Reason</th><th scope="col">Runtime</th><th scope="col">Seen in</th><th scope="col">Last seen</th></tr></thead>
<tbody>${o.sessions.map(sessionRow).join('')}</tbody></table>`;
  const ledger = o.ledger.problem
    ? `<p class="notice" role="status">The ledger could not be read: ${esc(o.ledger.problem)}. The page shows what the service saw.</p>`
    : '';
  return `${ledger}<section aria-labelledby="needs-human-h" id="needs-human"><h2 id="needs-human-h">Needs a human (<span data-count="needs-human">${o.needsHuman.length}</span>)</h2>${needs}</section>
<section aria-labelledby="sessions-h" id="sessions"><h2 id="sessions-h">Sessions</h2>${o.counts.sessions > 0 ? filterForm(o) : ''}${table}</section>
<section aria-labelledby="legend-h"><h2 id="legend-h">States</h2>${legend()}</section>`;
}

function traceLinks(links: readonly TraceLink[]): string {
  if (links.length === 0) return '';
  return `<p class="traces">${links
    .map(
      (l) =>
        `<a href="${esc(l.href)}" rel="noreferrer" target="_blank">trace of the ${l.side} span <code>${esc(l.traceId)}</code></a>`,
    )
    .join(' · ')}</p>`;
}

function digest(d: string | null): string {
  return d === null ? '<span class="muted">-</span>' : `<code class="digest">${esc(d)}</code>`;
}

function decisionsTable(rows: readonly DecisionRow[]): string {
  if (rows.length === 0) return '';
  return `<table class="decisions"><thead><tr><th scope="col">Decision</th><th scope="col">Verdict</th><th scope="col">Reason</th><th scope="col">Before (digest)</th><th scope="col">After (digest)</th><th scope="col">Approval refs</th></tr></thead><tbody>${rows
    .map(
      (d) =>
        `<tr data-decision="${esc(d.name)}"><th scope="row"><code>${esc(d.name)}</code></th><td>${d.verdict === 'added' ? `<span class="badge activity">${esc(d.verdict)}</span>` : stateBadge(d.verdict)}</td><td><code>${esc(d.reason)}</code></td><td>${digest(d.preDigest)}</td><td>${digest(d.postDigest)}</td><td>${d.approvalRefs.length ? d.approvalRefs.map((r) => `<code>${esc(r)}</code>`).join(' → ') : '-'}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

function approvalsTable(rows: readonly ApprovalRow[]): string {
  if (rows.length === 0) return '';
  return `<h4>Approvals</h4><table class="approvals"><thead><tr><th scope="col">Decision</th><th scope="col">From (digest)</th><th scope="col">To (digest)</th><th scope="col">Ref</th><th scope="col">By</th><th scope="col">At</th><th scope="col">In the chain</th></tr></thead><tbody>${rows
    .map(
      (a) =>
        `<tr><td><code>${esc(a.decision)}</code></td><td>${digest(a.fromDigest)}</td><td>${digest(a.toDigest)}</td><td><code>${esc(a.ref)}</code></td><td><code>${esc(a.by)}</code></td><td>${time(a.at)}</td><td>${a.inChain ? 'yes' : 'no'}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

function resolutionItem(r: ResolutionRow): string {
  const missing = r.evidenceMissing
    ? `<p class="missing">Evidence missing: <code>${esc(r.evidenceMissing.code)}</code>: ${esc(r.evidenceMissing.why)}.</p>`
    : '';
  const reobs =
    r.reobservationSeconds === null
      ? ''
      : ` · re-observed after <span class="duration" title="${esc(r.reobservationSeconds)} s">${esc(formatDuration(r.reobservationSeconds))}</span>`;
  return `<li data-state="${esc(r.state)}"><p>${time(r.resolvedAt)} ${stateBadge(r.state)} action <code>${esc(r.action)}</code> · reason <code>${esc(r.reason)}</code> · decision <code>${esc(r.primaryDecision ?? '-')}</code> · resolved by <code>${esc(r.cause)}</code> · activity ${activityBadge(r.activity)}${reobs}</p>
${missing}${decisionsTable(r.decisions)}${approvalsTable(r.approvals)}${traceLinks(r.traces)}</li>`;
}

function boundarySection(b: BoundaryRow): string {
  const head = `<h3>Boundary <code>${esc(b.boundaryId ?? '(no id)')}</code>${b.runtime ? ` · ${esc(b.runtime)}` : ''}${b.trigger ? ` · ${esc(b.trigger)}` : ''}</h3>`;
  if (b.pending) {
    const missing = b.pending.evidenceMissing
      ? ` Evidence missing before compaction: <code>${esc(b.pending.evidenceMissing.code)}</code>: ${esc(b.pending.evidenceMissing.why)}.`
      : '';
    return `<section class="boundary" data-pending="true">${head}<p>${stateBadge('pending')} Waiting for its post observation since ${time(b.pending.since)}; without one it resolves <code>unverified</code> at ${time(b.pending.resolvesBy)}.${missing}</p>${traceLinks(b.traces)}</section>`;
  }
  return `<section class="boundary">${head}<ol class="timeline" aria-label="Resolutions, newest first">${b.resolutions.map(resolutionItem).join('')}</ol></section>`;
}

function ledgerSection(l: LedgerBoundaryRow): string {
  const missing = l.evidenceMissing.length
    ? `<ul class="missing">${l.evidenceMissing.map((m) => `<li>${esc(m.phase)} snapshot missing at ${time(m.at)}: <code>${esc(m.code)}</code>: ${esc(m.why)}.</li>`).join('')}</ul>`
    : '';
  const provenance =
    l.provenance === 'record'
      ? '<p class="provenance" data-provenance="record">Restated <strong>from the record</strong>: the agent read the task record or the ledger after the compaction and before restating, so a match shows the value was restored, not that it survived the summary.</p>'
      : l.provenance === 'context'
        ? '<p class="provenance" data-provenance="context">Restated from the agent\'s own context (it read neither the task record nor the ledger after the compaction).</p>'
        : '';
  return `<section aria-labelledby="ledger-h" class="boundary" id="ledger"><h2 id="ledger-h">In the ledger</h2>
<p>Latest boundary <code>${esc(l.boundaryId)}</code>${l.runtime ? ` · ${esc(l.runtime)}` : ''}${l.trigger ? ` · ${esc(l.trigger)}` : ''}${l.compactedAt ? ` · compacted ${time(l.compactedAt)}` : ''}: ${stateBadge(l.state)} action <code>${esc(l.action)}</code> · reason <code>${esc(l.reason)}</code> · decision <code>${esc(l.primaryDecision ?? '-')}</code>${l.activity ? ` · activity ${activityBadge(l.activity.state)} at ${time(l.activity.at)}` : ''}</p>
${provenance}${missing}${decisionsTable(l.decisions)}${approvalsTable(l.approvals)}</section>`;
}

/** A session page's `<main>` content. */
export function sessionMain(d: SessionDetail): string {
  const boundaries =
    d.boundaries.length === 0
      ? `<p class="empty">${d.source === 'ledger' ? "The service has not seen this session's spans; the ledger's record is above." : "No boundary of this session in the page's history (the service restarted since)."}</p>`
      : d.boundaries.map(boundarySection).join('');
  return `<p><a href="${UI_PATHS.root}">← All sessions</a></p>
<h2 id="session-h">Session <code>${esc(d.sessionId)}</code> ${stateBadge(d.state)} ${activityBadge(d.activity)}</h2>
<p class="muted">reason <code>${esc(d.reason ?? '-')}</code> · decision <code>${esc(d.primaryDecision ?? '-')}</code>${d.runtime ? ` · runtime ${esc(d.runtime)}` : ''} · last seen ${time(d.lastSeenAt)}</p>
<section aria-labelledby="next-h"><h2 id="next-h">Next step</h2>${stepHtml(d.nextStep, d.key)}</section>
${d.ledger ? ledgerSection(d.ledger) : ''}
<section aria-labelledby="boundaries-h"><h2 id="boundaries-h">Boundaries over time (from the spans)</h2>${boundaries}</section>`;
}

/** What a full page needs beside its `<main>`. */
export interface PageFrame {
  title: string;
  main: string;
  /** The fragment URL the live script reloads `<main>` from; none for static pages. */
  fragment?: string;
  version?: number;
  generatedAt: string;
}

/** A complete HTML document. */
export function page(frame: PageFrame): string {
  const live =
    frame.fragment === undefined
      ? ''
      : ` data-fragment="${esc(frame.fragment)}" data-events="${UI_PATHS.events}" data-version="${esc(frame.version ?? 0)}"`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(frame.title)}</title><link rel="stylesheet" href="${UI_PATHS.css}"><link rel="icon" href="${UI_PATHS.icon}" type="image/svg+xml">
<script type="module" src="${UI_PATHS.script}"></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header><h1><a href="${UI_PATHS.root}">agent-continuity</a></h1>
<p class="meta">Rendered ${time(frame.generatedAt)} · <span id="live-status" role="status">${frame.fragment === undefined ? '' : 'reload the page to update'}</span></p></header>
<main id="main" tabindex="-1"${live}>${frame.main}</main>
<footer class="meta footer">Digests, ids, decision names and times only: no decision value, path, summary or key is ever shown. JSON: <a href="${UI_PATHS.overviewJson}">${UI_PATHS.overviewJson}</a>.</footer>
</body></html>`;
}

/** The login page shown when a bearer token guards the page. */
export function loginPage(generatedAt: string, failed: boolean): string {
  return page({
    title: 'agent-continuity · sign in',
    generatedAt,
    main: `<h2>Sign in</h2>
${failed ? '<p role="alert">That token is not the one this service is configured with.</p>' : ''}
<p>This service requires its bearer token (<code>server.bearerToken</code>) to show the continuity page.</p>
<form class="login" method="post" action="${UI_PATHS.login}"><label for="token">Bearer token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`,
  });
}
