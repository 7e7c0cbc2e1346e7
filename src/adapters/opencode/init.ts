/**
 * `continuity init opencode`: adds the continuity plugin to the project's `opencode.json`
 * `plugin` list as a `file://` URL of this installation's built plugin, adds `.continuity/` to the
 * project's `.gitignore`, and creates the task record template. `--remove` takes out exactly our
 * entry and keeps everyone else's.
 *
 * Why the config key and not `.opencode/plugin/`: OpenCode 1.18.33 installs `@opencode-ai/plugin`
 * with npm into every config directory that has plugins, and `<project>/.opencode/` is one, so a
 * plugin file there makes OpenCode write `node_modules/`, `package.json` and a lock file into the
 * user's project. A `file://` entry in `opencode.json` is loaded from where it is (this
 * installation, whose own dependencies Bun resolves), and writes nothing into the project.
 *
 * Idempotent: our entry (any `file://…/adapters/opencode/plugin.js`) already present is left as
 * it is, or rewritten to this installation's path when it points elsewhere (a moved checkout).
 * The file must be JSON (`opencode.json`; OpenCode merges an `opencode.jsonc` beside it and
 * concatenates the `plugin` lists); one that is not is refused and nothing is written.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from '../../decision/problems.js';
import {
  ensureProjectFiles,
  nextStepLine,
  PROJECT_FILES_KEPT,
  readJsonSettings,
  writeJsonSettings,
} from '../core/project.js';
import { isRecord } from '../core/state.js';
import { OPENCODE_CONFIG_FILE, pluginPath } from './config.js';

/** Recognizes our entry in a `plugin` list, whatever installation it points at. */
const OURS = /^file:\/\/.*\/adapters\/opencode\/plugin\.js$/;
/** The configuration file init edits unless told otherwise. */
export const DEFAULT_CONFIG_FILE = OPENCODE_CONFIG_FILE;
const SCHEMA = 'https://opencode.ai/config.json';

/** The spec of one `plugin` entry: `"spec"` or `["spec", {options}]`. */
function specOf(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (Array.isArray(entry) && typeof entry[0] === 'string') return entry[0];
  return undefined;
}

function isOurs(entry: unknown): boolean {
  const spec = specOf(entry);
  return spec !== undefined && OURS.test(spec);
}

function pluginsOf(doc: unknown, source: string): { settings: Record<string, unknown>; plugins: unknown[] } {
  if (!isRecord(doc)) throw new InputError(source, [{ path: '(root)', message: 'expected a JSON object' }]);
  const raw = doc.plugin ?? [];
  if (!Array.isArray(raw) || !raw.every((e) => specOf(e) !== undefined)) {
    throw new InputError(source, [
      { path: 'plugin', message: 'expected an array of plugin specs ("spec" or ["spec", {options}])' },
    ]);
  }
  return { settings: { ...doc }, plugins: raw };
}

/** What merging did. */
export interface MergeResult {
  settings: Record<string, unknown>;
  status: 'added' | 'present' | 'rewritten';
  /** Plugin entries of others that were kept. */
  kept: number;
}

/**
 * Adds our plugin entry to a parsed configuration (pure), or rewrites ours to `url` when it
 * points elsewhere; others' entries are never touched. Throws {@link InputError} naming `source`
 * and the field when the document's shape is not OpenCode's.
 */
export function mergePluginConfig(doc: unknown, source: string, url: string): MergeResult {
  const { settings, plugins } = pluginsOf(doc, source);
  const kept = plugins.filter((e) => !isOurs(e)).length;
  const i = plugins.findIndex(isOurs);
  if (i === -1) {
    settings.plugin = [...plugins, url];
    return { settings, status: 'added', kept };
  }
  if (specOf(plugins[i]) === url) return { settings, status: 'present', kept };
  const entry = plugins[i];
  const next = [...plugins];
  next[i] = Array.isArray(entry) ? [url, ...entry.slice(1)] : url;
  settings.plugin = next;
  return { settings, status: 'rewritten', kept };
}

/** Takes out exactly our entries (pure); a `plugin` list left empty goes. */
export function removePluginConfig(
  doc: unknown,
  source: string,
): { settings: Record<string, unknown>; removed: number } {
  const { settings, plugins } = pluginsOf(doc, source);
  const kept = plugins.filter((e) => !isOurs(e));
  if (kept.length > 0) settings.plugin = kept;
  else delete settings.plugin;
  return { settings, removed: plugins.length - kept.length };
}

/** Options of `continuity init opencode`. */
export interface InitOptions {
  /** Project directory. Default the working directory. */
  project: string;
  /** The configuration file, relative to the project or absolute (e.g. `~/.config/opencode/opencode.json`). Default `opencode.json`. */
  config?: string;
  /** Take out exactly what init added. */
  remove?: boolean;
}

/** Runs init (or `--remove`) and returns the lines it prints. Nothing is written when the configuration file is bad. */
export function runInit(options: InitOptions): string[] {
  const project = options.project;
  const rel = options.config ?? DEFAULT_CONFIG_FILE;
  const path = isAbsolute(rel) ? rel : resolve(project, rel);
  const { doc, mode, exists } = readJsonSettings(path, rel);
  const out: string[] = [];
  if (options.remove) {
    const r = removePluginConfig(doc, rel);
    if (r.removed > 0) {
      writeJsonSettings(path, r.settings, mode);
      out.push(`${rel}: removed the continuity plugin`);
    } else {
      out.push(`${rel}: no continuity plugin; unchanged`);
    }
    out.push(PROJECT_FILES_KEPT);
    return out;
  }
  const plugin = pluginPath();
  if (!existsSync(plugin)) {
    throw new InputError('init', [
      {
        path: 'opencode',
        message: `the plugin is not built (${join('dist', 'adapters', 'opencode', 'plugin.js')} is missing); run npm run build in agent-continuity first`,
      },
    ]);
  }
  const url = pathToFileURL(plugin).href;
  const base = exists ? doc : { $schema: SCHEMA };
  const merged = mergePluginConfig(base, rel, url);
  if (merged.status !== 'present') writeJsonSettings(path, merged.settings, mode);
  const what = 'compaction capture, restatement request, write gate';
  if (merged.status === 'added') out.push(`${rel}: added the continuity plugin ${url} (${what})`);
  else if (merged.status === 'rewritten') out.push(`${rel}: continuity plugin entry rewritten to ${url}`);
  else out.push(`${rel}: already has the continuity plugin; unchanged`);
  if (merged.kept > 0) out.push(`${rel}: kept ${merged.kept} plugin(s) of your own`);
  out.push(...ensureProjectFiles(project));
  out.push(nextStepLine('opencode'));
  return out;
}
