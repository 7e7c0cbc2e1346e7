#!/usr/bin/env node
// The CommonJS build, after `tsc` (`npm run build` runs both): every module of dist/ again as
// CommonJS in dist/cjs/, one file per source file (so what `require('agent-continuity')` loads is
// as lean as the ES module entry, and the lazy `import()`s stay lazy as `require()`s), with
// `dist/cjs/package.json` saying `"type": "commonjs"` and a copy of every declaration file beside
// them (TypeScript reads a `.d.ts` under that marker as CommonJS declarations).
//
// Two things tsc's CommonJS output could not do, so esbuild transforms each file instead:
// - `import.meta.url` becomes the URL of the same module in the ES module build (dist/x.js for
//   dist/cjs/x.js): the files it locates (the page's client script, worker entries, the package
//   root) exist once, beside the ES modules;
// - packages that ship only an ES module (canonicalize, hysnappy: no `require` export) are
//   inlined into the one file that imports them; every other import stays a `require()`.
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'cjs');
/** Packages without a CommonJS entry: bundled into their importer. */
const INLINE = new Set(['canonicalize', 'hysnappy']);
/** Not part of the library: the demo and the page's browser script. */
const SKIP = ['src/demo/', 'src/ui/client/'];

const entryPoints = readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
  .map((e) => relative(root, join(e.parentPath, e.name)))
  .filter((f) => !SKIP.some((s) => f.startsWith(s)));

/** Keeps every relative import and every package external, except the ES-module-only ones. */
const externals = {
  name: 'externals',
  /** @param {import('esbuild').PluginBuild} b */
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('.')) {
        // Imports inside an inlined package are bundled with it; our own modules stay files.
        return args.importer.includes('node_modules') ? undefined : { path: args.path, external: true };
      }
      const pkg = args.path.startsWith('@')
        ? args.path.split('/').slice(0, 2).join('/')
        : args.path.split('/')[0];
      return INLINE.has(pkg) ? undefined : { path: args.path, external: true };
    });
  },
};

await build({
  absWorkingDir: root,
  entryPoints,
  outdir: out,
  outbase: 'src',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // import() of our own lazily loaded modules becomes a deferred require().
  supported: { 'dynamic-import': false },
  define: { 'import.meta': '__continuityImportMeta' },
  banner: {
    // The URL of this module's twin in the ES module build: dist/cjs/a/b.js → dist/a/b.js.
    js: '"use strict";\nvar __continuityImportMeta = { get url() { const p = require("node:path"); const i = __filename.lastIndexOf(p.sep + "cjs" + p.sep); return require("node:url").pathToFileURL(__filename.slice(0, i) + __filename.slice(i + 4)).href; } };',
  },
  plugins: [externals],
  logLevel: 'warning',
  legalComments: 'none',
});

writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

// The declarations, the same text read as CommonJS under the marker above.
const dist = join(root, 'dist');
for (const file of entryPoints) {
  const rel = file.replace(/^src\//, '').replace(/\.ts$/, '.d.ts');
  const from = join(dist, rel);
  if (!existsSync(from)) throw new Error(`build-cjs: ${rel} missing: run tsc -p tsconfig.build.json first`);
  mkdirSync(dirname(join(out, rel)), { recursive: true });
  cpSync(from, join(out, rel));
}
