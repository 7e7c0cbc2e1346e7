/**
 * The restatement tool's registration with Claude Code, written by `continuity init claude-code`:
 * the `continuity` server in the project's `.mcp.json` (`continuity mcp --runtime claude-code`,
 * started by Claude Code over stdio, outside the agent's Bash sandbox), its approval in the
 * settings (`enabledMcpjsonServers`: Claude Code 2.1.328 otherwise leaves a project server
 * pending until someone approves it in the dialog; `-p` runs approve project servers anyway), and
 * the tool's permission (`permissions.allow`: an MCP tool that is not allowed is denied in `-p`
 * runs and asked for in a session). `--remove` takes out exactly these.
 *
 * Pure functions over parsed documents. Whether the project registers the tool (the hooks ask,
 * to offer it only where it exists) is answered by ./config.ts, which the gate loads.
 */
import { InputError } from '../../decision/problems.js';
import { MCP_RESTATE_TOOL_NAME, MCP_SERVER_NAME } from '../core/mcp-names.js';
import type { HookLaunch } from '../core/project.js';
import { readShell } from '../core/shell.js';
import { isRecord } from '../core/state.js';
import { isOurServer, MCP_JSON, MCP_SERVE_ARGS } from './config.js';

export { isOurServer, MCP_JSON, restateToolRegistered } from './config.js';

/** The `.mcp.json` entry of our server. */
export interface McpServerEntry {
  type: 'stdio';
  command: string;
  args: string[];
  /**
   * The tool is always in the model's tool list, never deferred behind a tool search (a field of
   * Claude Code 2.1.328's stdio server entry): the compaction context names it at once.
   */
  alwaysLoad: true;
}

/**
 * The server entry for a hook launcher (`continuity`, `node /abs/bin/continuity.js`, a quoted
 * path): its shell words, as Claude Code spawns the server without a shell. Throws
 * {@link InputError} for a launcher that is not plain words.
 */
export function mcpServerEntry(launcher: string): McpServerEntry {
  const read = readShell(launcher);
  const words = read.commands.length === 1 ? read.commands[0]! : [];
  if (read.uncertain || words.length === 0 || words.some((w) => w.dynamic || w.redirect)) {
    throw new InputError('--command', [
      { path: '(option)', message: 'expected a plain command (words only) that starts continuity' },
    ]);
  }
  const [command, ...args] = words.map((w) => w.text);
  return { type: 'stdio', command: command!, args: [...args, ...MCP_SERVE_ARGS], alwaysLoad: true };
}

/**
 * The server entry for the hooks' launcher. For the project's own installation (hooks:
 * `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity`), `npx --no-install continuity`: Claude
 * Code 2.1.328 starts a `.mcp.json` server without a shell, in the directory it was started in
 * (the project or a subdirectory of it), and does not give `${CLAUDE_PROJECT_DIR}` a value there
 * (recorded: `posix_spawn '[redacted]/node_modules/.bin/continuity'` fails); `npx` finds the
 * project's `node_modules/.bin` from either directory, and `--no-install` never fetches anything.
 */
export function mcpServerEntryFor(launch: HookLaunch): McpServerEntry {
  if (launch.origin !== 'project') return mcpServerEntry(launch.text);
  return mcpServerEntry(PROJECT_MCP_LAUNCHER);
}

/** How `.mcp.json` starts the project's own installation. */
export const PROJECT_MCP_LAUNCHER = 'npx --no-install continuity';

function serversOf(
  doc: unknown,
  source: string,
): { doc: Record<string, unknown>; servers: Record<string, unknown> } {
  if (!isRecord(doc)) throw new InputError(source, [{ path: '(root)', message: 'expected a JSON object' }]);
  const servers = doc.mcpServers ?? {};
  if (!isRecord(servers))
    throw new InputError(source, [{ path: 'mcpServers', message: 'expected an object of name → server' }]);
  return { doc: { ...doc }, servers: { ...servers } };
}

/**
 * Adds (or rewrites, when its launcher changed) our server in a parsed `.mcp.json` (pure). A
 * server of the same name that is not ours is an {@link InputError}: init never replaces it.
 */
export function mergeMcpJson(
  doc: unknown,
  entry: McpServerEntry,
): { doc: Record<string, unknown>; change: 'added' | 'rewritten' | 'unchanged' } {
  const { doc: out, servers } = serversOf(doc, MCP_JSON);
  const current = servers[MCP_SERVER_NAME];
  if (current !== undefined && !isOurServer(current)) {
    throw new InputError(MCP_JSON, [
      {
        path: `mcpServers.${MCP_SERVER_NAME}`,
        message: 'is another server of that name; rename it, nothing was changed',
      },
    ]);
  }
  if (current !== undefined && JSON.stringify(current) === JSON.stringify(entry))
    return { doc: out, change: 'unchanged' };
  servers[MCP_SERVER_NAME] = entry;
  out.mcpServers = servers;
  return { doc: out, change: current === undefined ? 'added' : 'rewritten' };
}

/** Takes our server out of a parsed `.mcp.json` (pure); `empty` when nothing else is left in it. */
export function removeMcpJson(doc: unknown): {
  doc: Record<string, unknown>;
  removed: boolean;
  empty: boolean;
} {
  const { doc: out, servers } = serversOf(doc, MCP_JSON);
  const removed = isOurServer(servers[MCP_SERVER_NAME]);
  if (removed) delete servers[MCP_SERVER_NAME];
  if (Object.keys(servers).length > 0) out.mcpServers = servers;
  else delete out.mcpServers;
  return { doc: out, removed, empty: Object.keys(out).length === 0 };
}

/** What init adds to the settings for the tool: the server's approval and the tool's permission. */
export interface McpSettingsRules {
  enabledMcpjsonServers: string[];
  allow: string[];
}

/** The settings rules for our server. */
export const MCP_SETTINGS_RULES: McpSettingsRules = Object.freeze({
  enabledMcpjsonServers: [MCP_SERVER_NAME],
  allow: [MCP_RESTATE_TOOL_NAME],
}) as McpSettingsRules;

function strings(v: unknown, source: string, path: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw new InputError(source, [{ path, message: 'expected an array of strings' }]);
  return v as string[];
}

/** Adds the approval and the permission (pure); `added` lists what was new. */
export function mergeMcpSettings(
  settings: Record<string, unknown>,
  source: string,
): { settings: Record<string, unknown>; added: McpSettingsRules } {
  const out = { ...settings };
  const enabled = strings(out.enabledMcpjsonServers, source, 'enabledMcpjsonServers');
  const perms = out.permissions ?? {};
  if (!isRecord(perms))
    throw new InputError(source, [{ path: 'permissions', message: 'expected an object' }]);
  const allow = strings(perms.allow, source, 'permissions.allow');
  const added: McpSettingsRules = {
    enabledMcpjsonServers: MCP_SETTINGS_RULES.enabledMcpjsonServers.filter((s) => !enabled.includes(s)),
    allow: MCP_SETTINGS_RULES.allow.filter((r) => !allow.includes(r)),
  };
  if (added.enabledMcpjsonServers.length > 0)
    out.enabledMcpjsonServers = [...enabled, ...added.enabledMcpjsonServers];
  if (added.allow.length > 0) out.permissions = { ...perms, allow: [...allow, ...added.allow] };
  return { settings: out, added };
}

/** Takes out exactly `rules` (pure), dropping a list, then an object, left empty by it. */
export function removeMcpSettings(
  settings: Record<string, unknown>,
  rules: McpSettingsRules,
): { settings: Record<string, unknown>; removed: number } {
  const out = { ...settings };
  let removed = 0;
  if (Array.isArray(out.enabledMcpjsonServers)) {
    const before = out.enabledMcpjsonServers as unknown[];
    const kept = before.filter((s) => !(typeof s === 'string' && rules.enabledMcpjsonServers.includes(s)));
    removed += before.length - kept.length;
    if (kept.length > 0) out.enabledMcpjsonServers = kept;
    else delete out.enabledMcpjsonServers;
  }
  if (isRecord(out.permissions) && Array.isArray(out.permissions.allow)) {
    const before = out.permissions.allow as unknown[];
    const kept = before.filter((r) => !(typeof r === 'string' && rules.allow.includes(r)));
    removed += before.length - kept.length;
    const perms: Record<string, unknown> = { ...out.permissions, allow: kept };
    if (kept.length === 0) delete perms.allow;
    if (Object.keys(perms).length === 0) delete out.permissions;
    else out.permissions = perms;
  }
  return { settings: out, removed };
}
