/**
 * The continuity page's look: state colours from the Okabe–Ito palette (safe for the common
 * colour-vision deficiencies), each state also carrying its name and a symbol so colour is never
 * the only cue, and activity drawn as an outlined badge of its own so the two dimensions are never
 * flattened into one colour. Text on each fill meets WCAG AA contrast (4.5:1).
 */
import { CONTINUITY_STATES } from '../classify/states.js';
import type { RowState } from './model.js';

/** The Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2002/2008). */
export const OKABE_ITO = {
  orange: '#E69F00',
  skyBlue: '#56B4E9',
  bluishGreen: '#009E73',
  yellow: '#F0E442',
  blue: '#0072B2',
  vermillion: '#D55E00',
  reddishPurple: '#CC79A7',
  black: '#000000',
} as const;

/** How each state is drawn: fill, text colour on it, and a symbol beside the name. */
export const STATE_STYLE: Readonly<Record<RowState, { fill: string; text: string; symbol: string }>> = {
  conflicting: { fill: OKABE_ITO.vermillion, text: '#000000', symbol: '✕' },
  dropped: { fill: OKABE_ITO.reddishPurple, text: '#000000', symbol: '∅' },
  unverified: { fill: OKABE_ITO.yellow, text: '#000000', symbol: '?' },
  pending: { fill: OKABE_ITO.skyBlue, text: '#000000', symbol: '…' },
  approved_change: { fill: OKABE_ITO.blue, text: '#FFFFFF', symbol: '⇄' },
  preserved: { fill: OKABE_ITO.bluishGreen, text: '#000000', symbol: '✓' },
};

/** Symbols beside the activity names (activity is outlined, never filled with a state colour). */
export const ACTIVITY_SYMBOL: Readonly<Record<string, string>> = {
  working: '▶',
  waiting_human: '‖',
  idle: '○',
  unknown: '·',
};

const stateRules = Object.entries(STATE_STYLE)
  .map(([state, s]) => `.badge.state-${state}{background:${s.fill};color:${s.text};border-color:${s.fill}}`)
  .join('\n');

/** The page's style sheet, served as `/ui/page.css`. */
export const PAGE_CSS = `
:root{color-scheme:light;--fg:#111;--muted:#444;--line:#bbb;--bg:#fff;--panel:#f5f5f5;--focus:${OKABE_ITO.blue}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 "DejaVu Sans",system-ui,sans-serif;color:var(--fg);background:var(--bg)}
a{color:#00509e}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:3px solid var(--focus);outline-offset:2px;border-radius:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5em 1em}
.skip:focus{left:.5em;top:.5em;z-index:10}
header{display:flex;flex-wrap:wrap;align-items:baseline;gap:.5em 1.5em;padding:.8em 1.2em;border-bottom:1px solid var(--line)}
header h1{font-size:1.2em;margin:0}
header h1 a{color:inherit;text-decoration:none}
.meta{color:var(--muted);margin:0;font-size:.9em}
main{padding:0 1.2em 2em;max-width:1200px}
h2{font-size:1.1em;margin:1.4em 0 .5em}
h3{font-size:1em;margin:1em 0 .4em}
table{border-collapse:collapse;width:100%;margin:.3em 0 1em}
th,td{text-align:left;vertical-align:top;padding:.35em .6em;border-bottom:1px solid var(--line)}
thead th{font-size:.85em;color:var(--muted);font-weight:600}
code,pre{font-family:"DejaVu Sans Mono",ui-monospace,monospace;font-size:.85em}
code.digest{word-break:break-all}
td code:not(.digest){white-space:nowrap}
pre{background:var(--panel);border:1px solid var(--line);padding:.6em .8em;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:.3em 0}
.badge{display:inline-block;white-space:nowrap;border:2px solid;border-radius:3px;padding:0 .45em;font-weight:600;font-size:.9em}
${stateRules}
.badge.activity{background:#fff;color:#111;border-color:#111;font-weight:400;border-style:dashed}
.badge .sym{margin-right:.3em}
.cards{list-style:none;padding:0;margin:0;display:grid;gap:.8em}
.card{border:2px solid var(--line);border-left-width:8px;padding:.6em .9em;background:#fff}
.card.state-conflicting{border-left-color:${STATE_STYLE.conflicting.fill}}
.card.state-dropped{border-left-color:${STATE_STYLE.dropped.fill}}
.card h3{margin:.1em 0 .4em}
.empty{padding:.6em .9em;border:2px dashed var(--line);color:var(--muted)}
.step{margin:.4em 0}
.step .actor{font-weight:600}
.cmd{margin:.4em 0}
.cmd .label{font-size:.85em;color:var(--muted)}
button.copy{font:inherit;font-size:.85em;padding:.1em .6em;margin-left:.6em;cursor:pointer}
.boundary{border:1px solid var(--line);padding:.2em .9em .6em;margin:.8em 0}
.timeline{list-style:none;padding:0;margin:0}
.timeline>li{border-top:1px dashed var(--line);padding:.5em 0}
.legend{display:flex;flex-wrap:wrap;gap:.4em 1.2em;padding:0;list-style:none}
.muted{color:var(--muted)}
.notice{border:2px solid ${OKABE_ITO.orange};padding:.5em .9em;margin-top:1em}
.footer{padding:0 1.2em 1.2em}
form.login{max-width:28em;display:grid;gap:.5em}
form.login input{font:inherit;padding:.3em}
form.login button{font:inherit;padding:.3em;width:10em}
form.filter{display:flex;flex-wrap:wrap;gap:.5em;align-items:center;margin:.5em 0}
form.filter select,form.filter button{font:inherit;padding:.2em}
`;

/** The page's icon: five bars in the five state colours, served as `/ui/favicon.svg`. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">${CONTINUITY_STATES.map(
  (s, i) => `<rect x="${i * 2}" y="0" width="2" height="10" fill="${STATE_STYLE[s].fill}"/>`,
).join('')}</svg>`;
