/**
 * The restatement as an MCP tool over stdio (`continuity mcp`), for runtimes that start MCP
 * servers from their configuration (Claude Code's `.mcp.json`, Codex's `[mcp_servers]`). The agent
 * restates through the runtime's tool call, not through its shell, so it works where the shell is
 * sandboxed away from the state directory; the server runs as a child of the runtime, outside the
 * agent's Bash sandbox.
 *
 * One tool, `restate`, with the Agent SDK adapter's semantics: decision name → value as JSON,
 * recorded by the core's restatement (./restatement.ts) and answered with the same text
 * `continuity observe` prints. The optional `session` names the session the compaction context
 * gave; without it the runtime's own resolution applies (its variables, then the project's
 * recorded session).
 *
 * The names are in ./mcp-names.ts (the gate loads them). The transport is the MCP stdio transport (newline-delimited JSON-RPC 2.0, one message a line,
 * nothing but messages on stdout). Only what a tools-only server needs: `initialize`,
 * `notifications/initialized`, `ping`, `tools/list`, `tools/call`; anything else a request asks
 * for is `-32601`, a notification is ignored. Written here rather than depending on the MCP SDK,
 * whose server brings an HTTP framework and a JSON Schema validator for this one tool.
 */
import { InputError } from '../../decision/problems.js';
import { MCP_RESTATE_TOOL, MCP_RESTATE_TOOL_NAME, MCP_SERVER_NAME } from './mcp-names.js';
import { RESTATE_DECISIONS_DESCRIPTION, RESTATE_TOOL_DESCRIPTION } from './messages.js';
import type { RestateResult } from './restatement.js';
import { isRecord } from './state.js';

/**
 * Protocol revisions this server speaks (newest first). A client asking for one of them gets it
 * back; any other request gets the newest, as the lifecycle rules say, and the client decides.
 */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

/** The longest message line read; a longer one is answered with a parse error and dropped. */
const MAX_LINE_BYTES = 1024 * 1024;

/** JSON-RPC 2.0 error codes used here. */
const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

/** The tool's description, as the agent reads it (the frameworks' restatement tool says the same). */
export const RESTATE_DESCRIPTION = RESTATE_TOOL_DESCRIPTION;

/** The tool's input schema (JSON Schema, as MCP's `tools/list` carries it). */
export const RESTATE_INPUT_SCHEMA = Object.freeze({
  type: 'object',
  properties: {
    decisions: {
      type: 'object',
      description: RESTATE_DECISIONS_DESCRIPTION,
      additionalProperties: true,
    },
    session: {
      type: 'string',
      description: 'the session id the compaction message names (default: this session)',
    },
  },
  required: ['decisions'],
  additionalProperties: false,
});

/** What the server does with one `restate` call: the runtime's restatement. Throws `InputError` for bad input. */
export type RestateCall = (input: {
  decisions: Record<string, unknown>;
  session?: string;
  source: string;
}) => Promise<RestateResult>;

/** What the server needs. */
export interface McpServerOptions {
  /** Records a restatement. */
  restate: RestateCall;
  /** Renders a result for the agent (the text `continuity observe` prints). */
  render: (r: RestateResult) => string;
  /** Writes one outgoing line. */
  send: (line: string) => void;
  /** One line of diagnostics (stderr): never a value. */
  warn: (line: string) => void;
  /** The version in `serverInfo`. */
  version: string;
}

type Id = string | number | null;

interface ToolResult {
  content: { type: 'text'; text: string }[];
  isError?: boolean;
}

function rpcError(id: Id, code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
}

function rpcResult(id: Id, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

function text(t: string, isError = false): ToolResult {
  return { content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) };
}

/**
 * The protocol half of the server, transport-free: {@link McpServer.receive} takes one line and
 * answers through `send`. Requests are answered in the order they arrive (a restatement appends
 * to the ledger; two at once would only queue on its lock anyway).
 */
export class McpServer {
  private readonly _o: McpServerOptions;
  private _queue: Promise<void> = Promise.resolve();

  constructor(options: McpServerOptions) {
    this._o = options;
  }

  /** Handles one incoming line; resolves when its answer (if any) is sent. */
  receive(line: string): Promise<void> {
    const next = this._queue.then(() => this._handle(line));
    this._queue = next.catch(() => {});
    return next;
  }

  private async _handle(line: string): Promise<void> {
    if (line.trim() === '') return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this._o.send(rpcError(null, RPC.parseError, 'Parse error: not JSON'));
      return;
    }
    if (!isRecord(msg) || msg.jsonrpc !== '2.0') {
      this._o.send(rpcError(null, RPC.invalidRequest, 'Invalid Request: expected a JSON-RPC 2.0 object'));
      return;
    }
    const method = msg.method;
    const hasId = 'id' in msg;
    const id = msg.id;
    if (hasId && !(typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)))) {
      this._o.send(rpcError(null, RPC.invalidRequest, 'Invalid Request: id must be a string or an integer'));
      return;
    }
    if (typeof method !== 'string') {
      // A response to a request of ours (we send none) or garbage: nothing to answer.
      if (hasId && !('result' in msg) && !('error' in msg))
        this._o.send(rpcError(id as Id, RPC.invalidRequest, 'Invalid Request: no method'));
      return;
    }
    if (!hasId) return; // a notification (initialized, cancelled, …): never answered
    const rid = id as string | number;
    try {
      this._o.send(await this._request(rid, method, msg.params));
    } catch (e) {
      this._o.warn(`mcp: ${method} failed: ${(e as Error)?.message?.split('\n')[0] ?? String(e)}`);
      this._o.send(rpcError(rid, RPC.internalError, 'Internal error'));
    }
  }

  private async _request(id: string | number, method: string, params: unknown): Promise<string> {
    switch (method) {
      case 'initialize': {
        const asked = isRecord(params) ? params.protocolVersion : undefined;
        const version = (MCP_PROTOCOL_VERSIONS as readonly unknown[]).includes(asked)
          ? (asked as string)
          : MCP_PROTOCOL_VERSIONS[0];
        return rpcResult(id, {
          protocolVersion: version,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: MCP_SERVER_NAME, version: this._o.version },
          instructions:
            'After a context compaction, restate the task decisions with the restate tool before any consequential action.',
        });
      }
      case 'ping':
        return rpcResult(id, {});
      case 'tools/list':
        return rpcResult(id, {
          tools: [
            {
              name: MCP_RESTATE_TOOL,
              title: 'Restate the task decisions',
              description: RESTATE_DESCRIPTION,
              inputSchema: RESTATE_INPUT_SCHEMA,
            },
          ],
        });
      case 'tools/call': {
        if (!isRecord(params) || typeof params.name !== 'string')
          return rpcError(id, RPC.invalidParams, 'Invalid params: expected {name, arguments}');
        if (params.name !== MCP_RESTATE_TOOL)
          return rpcError(id, RPC.invalidParams, `Unknown tool: ${JSON.stringify(params.name.slice(0, 64))}`);
        return rpcResult(id, await this._restate(params.arguments));
      }
      default:
        return rpcError(id, RPC.methodNotFound, `Method not found: ${JSON.stringify(method.slice(0, 64))}`);
    }
  }

  /** A tool error is a result with `isError` (the model reads it), not a protocol error. */
  private async _restate(args: unknown): Promise<ToolResult> {
    const decisions = isRecord(args) && isRecord(args.decisions) ? args.decisions : undefined;
    if (!decisions)
      return text('continuity: expected {"decisions": {name: value, …}}; nothing recorded.', true);
    const session = isRecord(args) ? args.session : undefined;
    if (session !== undefined && typeof session !== 'string')
      return text('continuity: "session" must be the session id as a string; nothing recorded.', true);
    try {
      const r = await this._o.restate({
        decisions: { ...decisions },
        ...(session !== undefined ? { session } : {}),
        source: MCP_RESTATE_TOOL_NAME,
      });
      return text(this._o.render(r));
    } catch (e) {
      if (e instanceof InputError) return text(`continuity: ${e.message}`, true);
      this._o.warn(`mcp: restate: ${(e as Error)?.message?.split('\n')[0] ?? String(e)}`);
      return text(
        'continuity: the restatement could not be recorded; ask the human to check the continuity ledger.',
        true,
      );
    }
  }
}

/**
 * Serves MCP over a byte stream pair (the process's stdin and stdout): splits the input into
 * lines, hands each to the server, and resolves when the input ends and every answer is written.
 */
export function serveMcpStdio(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  options: Omit<McpServerOptions, 'send'>,
): Promise<void> {
  const server = new McpServer({ ...options, send: (line) => output.write(`${line}\n`) });
  return new Promise((resolveDone) => {
    let pending: Buffer[] = [];
    let size = 0;
    let overlong = false;
    let last: Promise<void> = Promise.resolve();
    const take = (line: string) => {
      last = server.receive(line);
    };
    input.on('data', (chunk: Buffer | string) => {
      let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      for (let nl = buf.indexOf(10); nl !== -1; nl = buf.indexOf(10)) {
        const part = buf.subarray(0, nl);
        buf = buf.subarray(nl + 1);
        if (overlong || size + part.length > MAX_LINE_BYTES) {
          options.warn(`mcp: a message longer than ${MAX_LINE_BYTES} bytes was dropped`);
          take('\u0000'); // answered as a parse error
        } else {
          take(Buffer.concat([...pending, part]).toString('utf8'));
        }
        pending = [];
        size = 0;
        overlong = false;
      }
      if (buf.length > 0 && !overlong) {
        if (size + buf.length > MAX_LINE_BYTES) {
          overlong = true;
          pending = [];
          size = 0;
        } else {
          pending.push(buf);
          size += buf.length;
        }
      }
    });
    input.on('end', () => {
      if (size > 0 && !overlong) take(Buffer.concat(pending).toString('utf8'));
      void last.finally(() => resolveDone());
    });
    input.on('error', () => resolveDone());
  });
}
