/**
 * The part of OpenCode's plugin API (`@opencode-ai/plugin` 1.18.33) the adapter uses, written out
 * structurally so the package needs no dependency on it: OpenCode loads the plugin file with Bun
 * and hands it these shapes. test/opencode/types.test.ts compiles the plugin against the real
 * package's `Plugin` and `Hooks` types, so a drift in the shipped types fails there.
 */

/** `client.app.log`'s body: one line in OpenCode's own log. */
export interface AppLogBody {
  service: string;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}

/** What the plugin factory receives (the fields used; OpenCode passes more). */
export interface PluginInput {
  /** The directory OpenCode runs in (its instance directory). */
  directory: string;
  /** The git worktree root (`/` outside a repository). */
  worktree: string;
  /** OpenCode's SDK client; only `app.log` is used, for warnings. */
  client?: unknown;
}

/** One bus event as the `event` hook receives it. */
export interface BusEvent {
  type: string;
  properties?: unknown;
}

/** The hooks the adapter registers. Each input and output is OpenCode's, narrowed to what is read. */
export interface ContinuityHooks {
  /** Every bus event; OpenCode calls it without awaiting the result. */
  event: (input: { event: BusEvent }) => Promise<void>;
  /** Before the summary request: `context` strings are appended to the summarizer's prompt. */
  'experimental.session.compacting': (
    input: { sessionID: string },
    output: { context: string[]; prompt?: string },
  ) => Promise<void>;
  /** After an automatic compaction's summary, before its synthetic "continue" message. */
  'experimental.compaction.autocontinue': (
    input: { sessionID: string; overflow?: boolean },
    output: { enabled: boolean },
  ) => Promise<void>;
  /** Before every model call (title, summarizer, agent): each `system` string is one system message. */
  'experimental.chat.system.transform': (
    input: { sessionID?: string },
    output: { system: string[] },
  ) => Promise<void>;
  /** Before every tool call, before OpenCode's permission check: a throw stops the tool. */
  'tool.execute.before': (
    input: { tool: string; sessionID: string; callID: string },
    output: { args: unknown },
  ) => Promise<void>;
  /** When the instance shuts down. */
  dispose: () => Promise<void>;
}
