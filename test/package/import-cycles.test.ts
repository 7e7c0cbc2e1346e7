import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SRC = join(ROOT, 'src');

/** Every `.ts` file under `dir`, as paths relative to the repository. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/**
 * The relative module specifiers `file` names: static imports and re-exports (type-only ones
 * too: a circle of types is still a circle a reader has to walk) and dynamic `import()` calls.
 */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((s) => s.startsWith('.'));
}

/** The import graph of `src/`: file → the files it imports (NodeNext `.js` → `.ts`). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = new Set(tsFiles(SRC));
  for (const file of files) {
    const targets = specifiers(file)
      .map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')))
      .map((t) => (files.has(t) ? t : files.has(join(t, 'index.ts')) ? join(t, 'index.ts') : t))
      .filter((t) => files.has(t));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan), i.e. the import circles. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return found.map((c) => c.map((f) => relative(ROOT, f)).sort());
}

describe('src/ import graph', () => {
  it('reads the imports it is checking (the graph is not empty)', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(50);
    const hook = graph.get(join(SRC, 'adapters', 'hook.ts')) ?? [];
    expect(hook.map((f) => relative(ROOT, f))).toContain('src/adapters/claude-code/hook.ts');
  });

  it('finds a circle when there is one', () => {
    const a = '/x/a.ts';
    const b = '/x/b.ts';
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toHaveLength(1);
  });

  it('has no import circles: no module imports one that imports it back', () => {
    expect(circles(importGraph())).toEqual([]);
  });
});
