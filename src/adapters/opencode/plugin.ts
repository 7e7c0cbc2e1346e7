/**
 * The file OpenCode loads: `continuity init opencode` adds `file://<this file, built>` to the
 * project's `opencode.json` `plugin` list. OpenCode (1.18.33) calls every export of a plugin
 * module as a plugin factory, so this module exports exactly one function and nothing else; the
 * adapter lives in ./adapter.ts. It imports only this package's own modules and dependencies
 * (resolved from its installation by OpenCode's Bun), so OpenCode installs nothing for it.
 */
import { createContinuityHooks } from './adapter.js';
import type { ContinuityHooks, PluginInput } from './types.js';

/** The continuity plugin: OpenCode calls it once per instance (project directory). */
export async function ContinuityPlugin(input: PluginInput): Promise<ContinuityHooks> {
  return createContinuityHooks(input);
}
