/**
 * The parts of `@anthropic-ai/claude-agent-sdk` the adapter touches, typed structurally so that
 * this package needs neither the SDK nor its types: the SDK is the application's (an optional peer
 * dependency), and importing `agent-continuity/claude-agent-sdk` never loads it. Each type is a
 * subset of the SDK's own (sdk.d.ts of 0.3.328), so the hooks, the MCP server and the options the
 * adapter returns are assignable where the SDK expects its types
 * (test/claude-agent-sdk/types.test.ts compiles that against the real sdk.d.ts).
 */

/**
 * The hook events the adapter registers callbacks for. `Interrupt` is the SDK's since 0.3.337 (an
 * older SDK never calls it).
 */
export type AgentSdkHookEvent =
  | 'PreCompact'
  | 'SessionStart'
  | 'PostCompact'
  | 'InstructionsLoaded'
  | 'PreToolUse'
  | 'UserPromptSubmit'
  | 'PostToolUse'
  | 'PostToolUseFailure'
  | 'Stop'
  | 'Interrupt';

/** What a callback of the adapter answers (a subset of the SDK's `SyncHookJSONOutput`). */
export type AgentSdkHookOutput =
  | Record<string, never>
  /** PreCompact: appended to the summarizer's instructions (its only field that counts, observed). */
  | { systemMessage: string }
  | { hookSpecificOutput: { hookEventName: 'SessionStart'; additionalContext: string } }
  | {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse';
        permissionDecision: 'ask' | 'deny';
        permissionDecisionReason: string;
      };
    };

/** A hook callback as the SDK calls it (its `HookCallback`, with the input left unread until validated). */
export type AgentSdkHookCallback = (
  input: unknown,
  toolUseID: string | undefined,
  options: { signal: AbortSignal },
) => Promise<AgentSdkHookOutput>;

/** A hook matcher (the SDK's `HookCallbackMatcher`). */
export interface AgentSdkHookMatcher {
  matcher?: string;
  hooks: AgentSdkHookCallback[];
  /** Seconds. */
  timeout?: number;
  /** `block`: a failure of the callback blocks what the event guards (a tool call). */
  onFailure?: 'continue' | 'block';
}

/** The hooks to spread into `options.hooks`. */
export type AgentSdkHooks = { [E in AgentSdkHookEvent]: AgentSdkHookMatcher[] };

/** An MCP tool result (the MCP SDK's `CallToolResult`, text only). */
export interface AgentSdkToolResult {
  content: Array<{ type: 'text'; text: string }>;
  isError?: boolean;
  [key: string]: unknown;
}

/**
 * The two functions of the SDK that build an in-process MCP server, passed in by the application
 * (`import { createSdkMcpServer, tool } from '@anthropic-ai/claude-agent-sdk'`) so that this
 * package never imports the SDK. `S` is the SDK's server configuration type.
 */
export interface AgentSdkMcpFactory<S = unknown> {
  createSdkMcpServer(options: { name: string; version?: string; tools?: Array<never> }): S;
  tool(
    name: string,
    description: string,
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's own zod raw shape type, which this package does not import.
    inputSchema: any,
    // biome-ignore lint/suspicious/noExplicitAny: the arguments the SDK validated against that shape.
    handler: (args: any, extra: unknown) => Promise<AgentSdkToolResult>,
    extras?: { alwaysLoad?: boolean },
  ): unknown;
}

/** The query options the adapter merges into (the SDK's `Options`, the fields it touches). */
export interface AgentSdkOptionsLike {
  hooks?: Partial<Record<string, unknown[]>>;
  mcpServers?: Record<string, unknown>;
  allowedTools?: string[];
  [key: string]: unknown;
}

import type { TracerProviderLike } from '../core/tracer-sink.js';

export type { TracerProviderLike };

/** Options of {@link createAgentSdkContinuity}. */
export interface AgentSdkContinuityOptions<S = unknown> {
  /**
   * The project directory: where the task record (`.continuity/task.json`) and the configuration
   * (`.continuity/config.json`) are. Give the query's `cwd`. Default `process.cwd()`.
   */
  projectDir?: string;
  /** The task record, absolute or relative to the project. Default `CONTINUITY_TASK_RECORD`, else `.continuity/task.json`. */
  taskRecord?: string;
  /**
   * The environment the `CONTINUITY_*` settings are read from, once, here. Give the query's `env`
   * when it sets them. Default `process.env`.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * `{ createSdkMcpServer, tool }` from the SDK: with them the adapter offers the restatement as an
   * in-process MCP tool. Without them the agent restates with `continuity observe` in its shell.
   */
  sdk?: AgentSdkMcpFactory<S>;
  /**
   * Where the spans go. Default: the OpenTelemetry API's global tracer provider when the
   * application registered one, else OTLP/HTTP like the hooks (`CONTINUITY_OTLP_*`, to a local
   * `continuity serve` by default, spooled when it is not there).
   */
  tracerProvider?: TracerProviderLike;
  /** Receives a line for every problem (never a value, never an absolute path). Default: stderr. */
  onWarning?: (line: string) => void;
}
