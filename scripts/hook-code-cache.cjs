#!/usr/bin/env node
// Makes dist/hook.cjs.cache: V8's code cache of the hook bundle, taken after the bundle has
// answered one write-gate call on its fast path, so the functions that path runs are in it
// compiled. bin/continuity.js compiles dist/hook.cjs from it when this Node's V8 accepts it (a
// cache made by another Node or with other flags is rejected and the bundle compiled as usual).
// Run by scripts/build-hook.mjs with a scratch project and state directory in the environment and
// a PreToolUse payload of a session that has started on standard input.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { dirname } = require('node:path');
const vm = require('node:vm');

const file = process.argv[2];
const script = new vm.Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file });
const mod = { exports: {}, filename: file };
script.runInThisContext()(mod.exports, Module.createRequire(file), mod, file, dirname(file));
// The gate's answer (none: no objection) is not this script's output.
process.stdout.write = () => true;
mod.exports.runHook('claude-code').then((code) => {
  if (code !== 0) {
    process.stderr.write(`hook-code-cache: the warm-up gate call exited ${code}\n`);
    process.exit(1);
  }
  writeFileSync(`${file}.cache`, script.createCachedData());
  process.exit(0);
});
