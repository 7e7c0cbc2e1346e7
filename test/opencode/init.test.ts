/**
 * `continuity init opencode`: the plugin's `file://` entry in the project's `opencode.json`,
 * idempotent, keeping everyone else's keys and plugins, `--remove` taking out exactly ours, a file
 * that is not JSON refused with nothing written. The real binary loading what init writes is
 * test/opencode/e2e.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { mergePluginConfig, removePluginConfig } from '../../src/adapters/opencode/init.js';
import { BIN, ROOT } from './harness.js';

const OURS = pathToFileURL(join(ROOT, 'dist', 'adapters', 'opencode', 'plugin.js')).href;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function project(): string {
  const d = mkdtempSync(join(tmpdir(), 'oc-init-'));
  dirs.push(d);
  return d;
}

function init(dir: string, ...args: string[]) {
  return spawnSync(process.execPath, [BIN, 'init', 'opencode', '--project', dir, ...args], {
    encoding: 'utf8',
  });
}

const config = (dir: string) => JSON.parse(readFileSync(join(dir, 'opencode.json'), 'utf8'));

describe('continuity init opencode', () => {
  it('adds our file:// entry once, keeps the rest, and takes out exactly ours with --remove', () => {
    const dir = project();
    const mine = { model: 'x/y', plugin: ['opencode-wakatime', ['file:///elsewhere/p.js', { a: 1 }]] };
    writeFileSync(join(dir, 'opencode.json'), JSON.stringify(mine));
    const first = init(dir);
    expect(first.status, first.stderr).toBe(0);
    expect(config(dir)).toEqual({ ...mine, plugin: [...mine.plugin, OURS] });
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toContain('.continuity/');
    expect(statSync(join(dir, '.continuity', 'task.json')).isFile()).toBe(true);
    const before = readFileSync(join(dir, 'opencode.json'), 'utf8');
    const again = init(dir);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain('already has the continuity plugin');
    expect(readFileSync(join(dir, 'opencode.json'), 'utf8')).toBe(before);
    const removed = init(dir, '--remove');
    expect(removed.status, removed.stderr).toBe(0);
    expect(config(dir)).toEqual(mine);
  });

  it('rewrites an entry of ours that points at another installation', () => {
    const old = 'file:///old/checkout/dist/adapters/opencode/plugin.js';
    const r = mergePluginConfig({ plugin: ['a', old] }, 'opencode.json', OURS);
    expect(r).toMatchObject({ status: 'rewritten', kept: 1, settings: { plugin: ['a', OURS] } });
    expect(removePluginConfig({ plugin: [old] }, 'opencode.json')).toEqual({ settings: {}, removed: 1 });
  });

  it('refuses a file that is not JSON, or a plugin list of the wrong shape, and writes nothing', () => {
    const dir = project();
    writeFileSync(join(dir, 'opencode.json'), '{ "plugin": [ ');
    const r = init(dir);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('opencode.json');
    expect(readFileSync(join(dir, 'opencode.json'), 'utf8')).toBe('{ "plugin": [ ');
    writeFileSync(join(dir, 'opencode.json'), '{"plugin": "one"}');
    const shape = init(dir);
    expect(shape.status).not.toBe(0);
    expect(shape.stderr).toContain('plugin');
    expect(readFileSync(join(dir, 'opencode.json'), 'utf8')).toBe('{"plugin": "one"}');
    expect(() => statSync(join(dir, '.gitignore'))).toThrow();
  });

  it("refuses another runtime's flags", () => {
    const r = init(project(), '--codex-home', '/x');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('--codex-home');
  });
});
