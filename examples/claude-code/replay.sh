#!/usr/bin/env bash
# A Claude Code session replayed without Claude Code: the hook payloads Claude Code would send,
# piped into `continuity hook claude-code`, in a throw-away project and state directory.
# The agent widens its scope after compaction; the gate stops the write; the agent's own attempt
# to approve is refused; a human approves; the write goes through.
#
#   npm run build && examples/claude-code/replay.sh
#
# Spans go to CONTINUITY_OTLP_ENDPOINT (default http://127.0.0.1:4318, e.g. `continuity serve`);
# when nothing listens there they are spooled in the throw-away state directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
continuity() { node "$here/../../bin/continuity.js" "$@"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
project="$work/project"
mkdir -p "$project/.continuity"
cp "$here/task.json" "$project/.continuity/task.json"
export CONTINUITY_STATE_DIR="$work/state"
export CONTINUITY_LEDGER="$work/state/ledger.jsonl"
export CONTINUITY_OTLP_TIMEOUT_MS="${CONTINUITY_OTLP_TIMEOUT_MS:-300}"
session="replay-$(date +%s)"

# One hook event, as Claude Code sends it (stdin JSON), from the hook's environment.
event() {
  local name="$1" extra="$2"
  printf '{"session_id":"%s","transcript_path":"%s/t.jsonl","cwd":"%s","hook_event_name":"%s"%s}' \
    "$session" "$work" "$project" "$name" "$extra" | CLAUDE_PROJECT_DIR="$project" continuity hook claude-code
}
# The gate's answer to a tool call: allow (no output), or its decision and reason.
tool() {
  local out
  out="$(event PreToolUse ",\"tool_name\":\"$1\",\"tool_input\":$2,\"tool_use_id\":\"toolu_1\"")"
  if [ -z "$out" ]; then echo "    gate: allow"; else
    node -e 'const o=JSON.parse(process.argv[1]).hookSpecificOutput; console.log(`    gate: ${o.permissionDecision}\n` + o.permissionDecisionReason.split("\n").map(l=>`      | ${l}`).join("\n"))' "$out"
  fi
}
step() { printf '\n== %s\n' "$1"; }

step "session starts; a write before any compaction"
event SessionStart ',"source":"startup"'
tool Write '{"file_path":"services/ledger/reconcile.ts","content":"…"}'

step "compaction, in Claude Code 2.1.328's order: PreCompact digests the task record (pending) and asks the summarizer to keep the decisions"
event PreCompact ',"trigger":"auto","custom_instructions":null' | sed 's/^/    | /'

step "SessionStart(compact) confirms the compaction (ledger, pre span) and asks the agent to restate its decisions"
event SessionStart ',"source":"compact","model":"claude-opus-5-5"' | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>console.log(JSON.parse(s).hookSpecificOutput.additionalContext.split("\n").map(l=>`    | ${l}`).join("\n")))'

step "PostCompact joins the same boundary"
event PostCompact ',"trigger":"auto","compact_summary":"(never stored)"'

step "the first write after compaction waits for the restatement"
tool Write '{"file_path":"services/billing/invoice.ts","content":"…"}'

step "the agent restates, from its Bash tool (no --session: the hooks recorded the project's session); its scope widened"
(cd "$project" && continuity observe --decisions - <<'JSON') | sed 's/^/    | /'
{"scope": {"repository": "acme/payments", "paths": ["services/ledger", "services/billing"]},
 "approval_boundary": {"requires_human": ["deploy", "schema_migration"]},
 "acceptance_test": {"command": "npm test -- ledger", "must_pass": true}}
JSON

step "the write is stopped, and so is the agent's attempt to approve its own change"
tool Write '{"file_path":"services/billing/invoice.ts","content":"…"}'
tool Bash "{\"command\":\"continuity approve --session $session --decision scope --from x --to y --ref r --by agent\"}"

step "a human approves the change in their own terminal"
continuity approve --session "$session" --decision scope \
  --from '{"repository":"acme/payments","paths":["services/ledger"]}' \
  --to '{"repository":"acme/payments","paths":["services/ledger","services/billing"]}' \
  --ref CHG-1042 --by reviewer-17 | sed 's/^/    | /'

step "the write goes through"
tool Write '{"file_path":"services/billing/invoice.ts","content":"…"}'

step "the ledger holds digests only; it verifies"
continuity status --session "$session" | sed 's/^/    | /'
continuity ledger verify | sed 's/^/    | /'
