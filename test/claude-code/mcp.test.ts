/**
 * `continuity mcp`: the restate tool over MCP stdio (newline-delimited JSON-RPC 2.0), as a real
 * child process the way Claude Code starts it from `.mcp.json`. The lifecycle and the tool per
 * the MCP specification; the restatement is the core's (the same answer `continuity observe`
 * gives); bad input is a tool error the model reads, with nothing written; a protocol error is a
 * JSON-RPC error; notifications are never answered; stdout carries nothing but messages.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MCP_PROTOCOL_VERSIONS } from '../../src/adapters/core/mcp.js';
import {
  BIN,
  compact,
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type World,
  writeTaskRecord,
} from './harness.js';

interface Rpc {
  jsonrpc: string;
  id: number | string | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** A running `continuity mcp`: send lines, read the answers in order. */
class Server {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly _lines: string[] = [];
  private _waiters: Array<() => void> = [];
  stderr = '';

  constructor(world: World, args: string[] = []) {
    this.child = spawn(process.execPath, [BIN, 'mcp', ...args], { env: world.env, cwd: world.project });
    let buf = '';
    this.child.stdout.setEncoding('utf8').on('data', (c: string) => {
      buf += c;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        this._lines.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
      for (const w of this._waiters.splice(0)) w();
    });
    this.child.stderr.setEncoding('utf8').on('data', (c: string) => {
      this.stderr += c;
    });
  }

  send(msg: unknown): void {
    this.child.stdin.write(`${typeof msg === 'string' ? msg : JSON.stringify(msg)}\n`);
  }

  /** The next answer line, parsed (every stdout line must be a JSON-RPC message). */
  async next(): Promise<Rpc> {
    while (this._lines.length === 0) await new Promise<void>((r) => this._waiters.push(r));
    const line = this._lines.shift()!;
    const msg = JSON.parse(line) as Rpc;
    expect(msg.jsonrpc).toBe('2.0');
    return msg;
  }

  async request(id: number, method: string, params?: unknown): Promise<Rpc> {
    this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    const r = await this.next();
    expect(r.id).toBe(id);
    return r;
  }

  /** Closes stdin; resolves with the exit code and whatever stdout still held. */
  async end(): Promise<{ code: number | null; unread: string[] }> {
    const code = await new Promise<number | null>((r) => {
      this.child.once('exit', r);
      this.child.stdin.end();
    });
    return { code, unread: this._lines };
  }
}

async function initialized(server: Server): Promise<Rpc> {
  const init = await server.request(1, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'test', version: '1' },
  });
  server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return init;
}

function toolText(r: Rpc): { text: string; isError: boolean } {
  const content = r.result?.content as Array<{ type: string; text: string }>;
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe('text');
  return { text: content[0]!.text, isError: r.result?.isError === true };
}

let world: World;
let server: Server | undefined;
beforeEach(() => {
  world = makeWorld('http://127.0.0.1:9');
  writeTaskRecord(world, PAYMENTS_DECISIONS);
});
afterEach(async () => {
  if (server && server.child.exitCode === null) await server.end();
  server = undefined;
  world.dispose();
});

describe('continuity mcp (stdio)', () => {
  it('initializes with the version the client asked for, lists one tool, answers ping, ignores notifications', async () => {
    server = new Server(world);
    const init = await initialized(server);
    expect(init.result).toMatchObject({
      protocolVersion: '2025-06-18',
      capabilities: { tools: { listChanged: false } },
      serverInfo: { name: 'continuity' },
    });
    expect((await server.request(2, 'ping')).result).toEqual({});
    const list = await server.request(3, 'tools/list');
    const tools = list.result?.tools as Array<{ name: string; inputSchema: Record<string, unknown> }>;
    expect(tools.map((t) => t.name)).toEqual(['restate']);
    expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', required: ['decisions'] });
    // The notification above got no answer: the next line is the answer to id 4.
    expect((await server.request(4, 'ping')).id).toBe(4);
    const { code, unread } = await server.end();
    expect(code).toBe(0);
    expect(unread).toEqual([]);
  });

  it('offers its newest revision to a client asking for one it does not speak', async () => {
    server = new Server(world);
    const r = await server.request(1, 'initialize', { protocolVersion: '1999-01-01', capabilities: {} });
    expect(r.result?.protocolVersion).toBe(MCP_PROTOCOL_VERSIONS[0]);
  });

  it('answers protocol errors with JSON-RPC errors: parse, invalid request, unknown method, unknown tool', async () => {
    server = new Server(world);
    await initialized(server);
    server.send('{not json');
    expect((await server.next()).error?.code).toBe(-32700);
    server.send({ id: 5, method: 'ping' });
    expect((await server.next()).error?.code).toBe(-32600);
    expect((await server.request(6, 'resources/list')).error?.code).toBe(-32601);
    expect((await server.request(7, 'tools/call', { name: 'approve', arguments: {} })).error?.code).toBe(
      -32602,
    );
    // Still serving.
    expect((await server.request(8, 'ping')).result).toEqual({});
  });

  it('restates after a compaction (the hooks recorded it): preserved, the post snapshot in the ledger', async () => {
    const sessionId = 'mcp-1';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    server = new Server(world);
    await initialized(server);
    const r = await server.request(2, 'tools/call', {
      name: 'restate',
      arguments: { session: sessionId, decisions: PAYMENTS_VALUES },
    });
    const { text, isError } = toolText(r);
    expect(isError).toBe(false);
    expect(text).toContain(`preserved (digest_match_fresh) for session ${sessionId}`);
    expect(text).toContain('writes allowed');
    const posts = ledgerRecords(world).filter((x) => x.type === 'snapshot' && x.phase === 'post');
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ sessionId, provenance: 'context' });
    // The digests only: no raw value in the ledger.
    expect(readFileSync(world.ledger, 'utf8')).not.toContain('acme/payments');
  });

  it('without a session argument falls back as continuity observe does: CLAUDE_CODE_SESSION_ID in its environment', async () => {
    const sessionId = 'mcp-env';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    world.env.CLAUDE_CODE_SESSION_ID = sessionId;
    server = new Server(world);
    await initialized(server);
    const r = await server.request(2, 'tools/call', {
      name: 'restate',
      arguments: { decisions: PAYMENTS_VALUES },
    });
    expect(toolText(r).text).toContain(`preserved (digest_match_fresh) for session ${sessionId}`);
  });

  it('bad input is a tool error naming what to fix, and nothing is written', async () => {
    const sessionId = 'mcp-bad';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    const before = readFileSync(world.ledger, 'utf8');
    server = new Server(world);
    await initialized(server);
    const cases: Array<[unknown, RegExp]> = [
      [{ session: sessionId }, /expected \{"decisions"/],
      [{ session: sessionId, decisions: [1, 2] }, /expected \{"decisions"/],
      [{ session: 42, decisions: {} }, /"session" must be the session id/],
      [{ session: 'not an id!', decisions: { scope: 1 } }, /--session.*opaque identifier|opaque identifier/],
      [{ session: sessionId, decisions: { 'Bad-Name': 1 } }, /Bad-Name.*decision name/],
    ];
    let id = 10;
    for (const [args, message] of cases) {
      const { text, isError } = toolText(
        await server.request(id++, 'tools/call', { name: 'restate', arguments: args }),
      );
      expect(isError, text).toBe(true);
      expect(text).toMatch(message);
    }
    expect(readFileSync(world.ledger, 'utf8')).toBe(before);
  });
  it('the gate never holds the restate tool of the server .mcp.json registers as ours, also where every tool is gated', async () => {
    const sessionId = 'mcp-gate';
    writeFileSync(
      join(world.project, '.continuity', 'config.json'),
      JSON.stringify({ gate: { tools: ['*'] } }),
    );
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    const call = { session: sessionId, decisions: PAYMENTS_VALUES };
    // No server of ours in .mcp.json: a tool of that name is anyone's, and held like any other.
    expect((await gate(world, sessionId, 'mcp__continuity__restate', call)).decision).toBe('deny');
    writeFileSync(
      join(world.project, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          continuity: { type: 'stdio', command: 'continuity', args: ['mcp', '--runtime', 'claude-code'] },
        },
      }),
    );
    expect((await gate(world, sessionId, 'mcp__continuity__restate', call)).decision).toBe('allow');
    // Every other tool is still held until the restatement.
    expect((await gate(world, sessionId, 'mcp__other__write', {})).decision).toBe('deny');
  });
});
