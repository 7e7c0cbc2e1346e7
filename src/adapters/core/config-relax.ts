/**
 * Which settings of a configuration file relax the write gate, by pure comparison with the strict
 * defaults (no I/O, no crypto: the gate's fast path runs it on every call that has a file).
 *
 * The agent can write `.continuity/config.json` like any file of the user, so a setting that makes
 * the gate answer less (a gated tool left out, a state routed to a milder verdict, unknown tools
 * allowed, the guard of the continuity files off) is obeyed only when the human sealed the file
 * (`continuity config seal`, ../../authority/config-seal.ts). Until then {@link tightenGate} keeps
 * the strict default for each such setting; a setting that tightens the gate needs no seal.
 */
import { ALL_REASONS, CONTINUITY_STATES } from '../../classify/states.js';
import type { GateVerdict } from './events.js';

/** The gate settings a configuration file can give (the file's, before the environment's). */
export interface GateSettings {
  tools: readonly string[];
  policy: Readonly<Record<string, GateVerdict>>;
  unknownTools: GateVerdict;
  protectContinuityFiles: boolean;
}

/** One setting that relaxes the gate: where it is, and what it does, in words with no value of the task. */
export interface Relaxation {
  /** The setting's path in the file (`gate.tools`, `gate.policy.conflicting`, …). */
  setting: string;
  /** What it relaxes (`leaves Bash, Write ungated`, `allow where the default is deny`). */
  effect: string;
}

const STRICTNESS: Readonly<Record<GateVerdict, number>> = { allow: 0, ask: 1, deny: 2 };

/** The verdict a policy gives `key` (`state` or `state/reason`), the default's rule of precedence. */
function verdictOf(
  policy: Readonly<Record<string, GateVerdict>>,
  defaults: Readonly<Record<string, GateVerdict>>,
  state: string,
  reason: string | undefined,
): GateVerdict {
  const specific = reason === undefined ? undefined : `${state}/${reason}`;
  return (
    (specific !== undefined ? policy[specific] : undefined) ??
    policy[state] ??
    (specific !== undefined ? defaults[specific] : undefined) ??
    defaults[state] ??
    'deny'
  );
}

/** Every policy key the gate can look up: each state, and each state with each reason. */
function everyKey(): Array<[string, string | undefined]> {
  const keys: Array<[string, string | undefined]> = [];
  for (const state of CONTINUITY_STATES) {
    keys.push([state, undefined]);
    for (const reason of ALL_REASONS) keys.push([state, reason]);
  }
  return keys;
}

/**
 * The settings of `file` that relax the gate compared with `strict` (the runtime's gated tools,
 * the default policy, `unknownTools: ask`, the guard on). Empty for a file that only tightens or
 * says nothing of the gate.
 */
export function relaxationsOf(file: GateSettings, strict: GateSettings): Relaxation[] {
  const out: Relaxation[] = [];
  if (!file.tools.includes('*')) {
    const left = strict.tools.includes('*') ? ['*'] : strict.tools.filter((t) => !file.tools.includes(t));
    if (left.length > 0) out.push({ setting: 'gate.tools', effect: `leaves ${left.join(', ')} ungated` });
  }
  for (const { key, was } of milderKeys(file.policy, strict.policy)) {
    out.push({ setting: `gate.policy.${key}`, effect: `${file.policy[key]} where the default is ${was}` });
  }
  if (STRICTNESS[file.unknownTools] < STRICTNESS[strict.unknownTools]) {
    out.push({
      setting: 'gate.unknownTools',
      effect: `${file.unknownTools} where the default is ${strict.unknownTools}`,
    });
  }
  if (strict.protectContinuityFiles && !file.protectContinuityFiles) {
    out.push({
      setting: 'gate.protectContinuityFiles',
      effect: 'turns the guard of the continuity files off',
    });
  }
  return out;
}

/** The policy keys of `policy` that give a milder verdict than `strict` somewhere they govern. */
function milderKeys(
  policy: Readonly<Record<string, GateVerdict>>,
  strict: Readonly<Record<string, GateVerdict>>,
): Array<{ key: string; was: GateVerdict }> {
  const out: Array<{ key: string; was: GateVerdict }> = [];
  for (const key of Object.keys(policy).sort()) {
    const slash = key.indexOf('/');
    const state = slash === -1 ? key : key.slice(0, slash);
    const reason = slash === -1 ? undefined : key.slice(slash + 1);
    // A key governs itself and, for a bare state, every reason of it without a key of its own.
    const milder = everyKey().find(
      ([s, r]) =>
        s === state &&
        (reason === undefined ? r === undefined || policy[`${s}/${r}`] === undefined : r === reason) &&
        STRICTNESS[verdictOf(policy, strict, s, r)] < STRICTNESS[verdictOf({}, strict, s, r)],
    );
    if (milder) out.push({ key, was: verdictOf({}, strict, milder[0], milder[1]) });
  }
  return out;
}

/**
 * The file's settings with every relaxation replaced by the strict default, each tightening kept:
 * the tools of both lists, the policy without its milder keys (dropped until none is left, since
 * dropping a specific key hands its reason to the bare state's key), the stricter unknown-tool
 * verdict, the guard on if either has it on.
 */
export function tightenGate(file: GateSettings, strict: GateSettings): GateSettings {
  const tools = file.tools.includes('*') ? file.tools : [...new Set([...strict.tools, ...file.tools])];
  const policy: Record<string, GateVerdict> = { ...file.policy };
  for (
    let milder = milderKeys(policy, strict.policy);
    milder.length > 0;
    milder = milderKeys(policy, strict.policy)
  ) {
    for (const { key } of milder) delete policy[key];
  }
  return {
    tools,
    policy,
    unknownTools:
      STRICTNESS[file.unknownTools] >= STRICTNESS[strict.unknownTools]
        ? file.unknownTools
        : strict.unknownTools,
    protectContinuityFiles: file.protectContinuityFiles || strict.protectContinuityFiles,
  };
}
