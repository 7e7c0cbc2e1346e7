/**
 * The target paths of a Codex `apply_patch` call, for the gate's path guard. Pure.
 *
 * The patch format (Codex's freeform tool; the text reaches PreToolUse as `tool_input.command`):
 *
 * ```text
 * *** Begin Patch
 * *** Add File: <path>        (then + lines)
 * *** Update File: <path>     (optionally followed by *** Move to: <path>, then @@ hunks)
 * *** Delete File: <path>
 * *** End Patch
 * ```
 *
 * One patch may touch several files; every header names one. The reading is lenient on purpose
 * (leading white space, CR line ends, a shell here-document around the patch): a header this
 * finds that Codex would not apply costs a false alarm, while a header Codex applies that this
 * missed would let a write past the guard. A patch with no header found is `undefined`, and the
 * gate treats it as uninspectable.
 */

const HEADER = /^\s*\*\*\* (?:Add File|Update File|Delete File|Move to):\s*(.*?)\s*$/;

/** The paths a patch adds, updates, deletes or moves to, in order, each once; `undefined` when none is found. */
export function patchTargets(patch: string): string[] | undefined {
  const out: string[] = [];
  for (const line of patch.split('\n')) {
    const m = HEADER.exec(line);
    const path = m?.[1];
    if (path && !out.includes(path)) out.push(path);
  }
  return out.length > 0 ? out : undefined;
}
