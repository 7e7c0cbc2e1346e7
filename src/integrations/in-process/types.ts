/**
 * The options every framework integration shares (LangChain JS, OpenAI Agents JS, Mastra): where
 * the project and its task record are, where the spans go, which tools the gate checks. No
 * framework's type appears here; each integration adds its own.
 */
import type { TracerProviderLike } from '../../adapters/core/tracer-sink.js';

export type { TracerProviderLike };

/** What the gate needs to know of one tool call. */
export interface ToolCallView {
  /** The tool's name, as the framework calls it. */
  name: string;
  /** Its input, as the model gave it (inspected, never stored). */
  input?: unknown;
}

/**
 * How the gate reads a tool of the application: a shell command (its text is inspected), a file
 * write (its target is inspected), or anything else (gated by name only). Default: anything else.
 */
export type ToolDescription =
  | { kind: 'command'; command?: string }
  | { kind: 'file_write'; filePath?: string }
  | { kind: 'other' };

/** Options of every framework integration. */
export interface IntegrationOptions {
  /**
   * The project directory: where the task record (`.continuity/task.json`) and the configuration
   * (`.continuity/config.json`) are. Default `process.cwd()`.
   */
  projectDir?: string;
  /** The task record, absolute or relative to the project. Default `CONTINUITY_TASK_RECORD`, else `.continuity/task.json`. */
  taskRecord?: string;
  /** The environment the `CONTINUITY_*` settings are read from, once, here. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Where the spans go. Default: the OpenTelemetry API's global tracer provider when the
   * application registered one (the spans then join the trace active where the framework calls
   * the integration), else OTLP/HTTP like the hooks (`CONTINUITY_OTLP_*`).
   */
  tracerProvider?: TracerProviderLike;
  /**
   * The tools the gate checks while continuity is broken (`*` for all). Default every tool but
   * the restatement tool: a framework's tools are the application's, so the integration cannot
   * tell which ones change anything. `.continuity/config.json` `gate.tools` and
   * `CONTINUITY_GATE_TOOLS` override it.
   */
  gatedTools?: readonly string[];
  /** How the gate reads a tool call (a shell, a file write). Default: by name only. */
  describeTool?: (call: ToolCallView) => ToolDescription;
  /** Receives a line for every problem (never a value, never an absolute path). Default: stderr. */
  onWarning?: (line: string) => void;
}
