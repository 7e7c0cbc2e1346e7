#!/bin/sh
# One compaction boundary sent as OTLP/JSON with curl, the way an agent that is not a Node
# process (Python, Go, a shell hook) can report it to `continuity serve` or to a collector in
# front of it: an continuity.compaction.pre span, then (one second later, after "compaction") an
# continuity.activity span and an continuity.compaction.post span.
#
#   examples/otlp-json/send-boundary.sh [--variant unchanged|changed-scope|approved-scope]
#                                       [--session ID] [--endpoint URL]
#
#   unchanged       every decision restated as before          -> continuity.state preserved
#   changed-scope   the scope widened, nobody approved it      -> conflicting (primary decision scope)
#   approved-scope  the same change, with an continuity.approval span between pre and post
#                                                              -> approved_change
#                   only when the approval is signed: `continuity serve` counts an approval only
#                   with a valid Ed25519 signature by a key in its correlation.approverKeys.
#                   Set CONTINUITY_APPROVAL_SIGNER to a command that takes SESSION BOUNDARY
#                   DECISION FROM_DIGEST TO_DIGEST REF APPROVED_BY APPROVED_AT and prints
#                   "KEY_ID SIGNATURE" (the human's signature of the approval statement,
#                   docs/security.md). Unsigned, the approval is only counted as an attempt and
#                   the boundary stays conflicting.
#
# Endpoint: --endpoint, else CONTINUITY_OTLP_ENDPOINT, else http://127.0.0.1:4318/v1/traces.
# A base URL without /v1/traces gets it appended (as the Claude Code adapter does).
# Needs: a POSIX sh, curl, date, od, tr, sleep. Exit 0 when both requests were accepted;
# 1 when the endpoint refused a request or a span; 2 on bad arguments.
set -eu

# The example's decisions. Only their digests are sent, never the values. Digest = "sha256:" +
# hex SHA-256 of the RFC 8785 canonical JSON of the NFC-normalized value (normalizer v1).
# Recompute one from the repository root after `npm run build`:
#   node --input-type=module -e 'import { digestValue } from "agent-continuity";
#     console.log(digestValue(JSON.parse(process.argv[1])))' '"fix/ledger-lock"'
# or with Python's standard library: python3 examples/otlp-json/continuity_digest.py '"fix/ledger-lock"'
# test/examples/otlp-json.test.ts checks every pair below against digestValue().
SCOPE_VALUE='{"repository":"acme/payments","paths":["services/ledger"]}'
SCOPE_DIGEST='sha256:9eef179bf288f59cbe59586d922ec5455a35a4dbca5a35c0ed3d722ac36ff9ad'
WIDER_SCOPE_VALUE='{"repository":"acme/payments","paths":["services/ledger","services/billing"]}'
WIDER_SCOPE_DIGEST='sha256:903c94ceef07987ea61b9e64c36ffdb9a547f43f34de8bdc3eff5b08dfe699de'
TARGET_VALUE='"fix/ledger-lock"'
TARGET_DIGEST='sha256:352794330b8ab777545a5d4e56939d46b617f69ee2e373a9dd90f1850bbb483d'
ACCEPTANCE_TEST_VALUE='{"command":"pytest tests/ledger","must_pass":true}'
ACCEPTANCE_TEST_DIGEST='sha256:5bd9462b0d9dc49d5d73ff6c0f966fdd145d37465a02a19e8464f067fc9a2c81'

RUNTIME=example-agent

usage() {
  echo "usage: $0 [--variant unchanged|changed-scope|approved-scope] [--session ID] [--endpoint URL]" >&2
  exit 2
}

variant=unchanged
session=
endpoint=${CONTINUITY_OTLP_ENDPOINT:-http://127.0.0.1:4318/v1/traces}
while [ $# -gt 0 ]; do
  case $1 in
    --variant) [ $# -ge 2 ] || usage; variant=$2; shift 2 ;;
    --session) [ $# -ge 2 ] || usage; session=$2; shift 2 ;;
    --endpoint) [ $# -ge 2 ] || usage; endpoint=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "$0: unknown argument: $1" >&2; usage ;;
  esac
done
case $variant in
  unchanged | changed-scope | approved-scope) ;;
  *) echo "$0: --variant: expected unchanged, changed-scope or approved-scope, got $variant" >&2; usage ;;
esac
case $endpoint in
  */v1/traces) ;;
  *) endpoint=${endpoint%/}/v1/traces ;;
esac

# Random hex ids: 16 bytes for a trace id, 8 for a span id (OTLP/JSON carries them as hex).
hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

[ -n "$session" ] || session=example-$(hex 6)
# The session id goes into JSON unescaped, so it must be an opaque id (as continuity requires).
case $session in
  '' | [!A-Za-z0-9_]* | *[!A-Za-z0-9._:@#+=/-]*)
    echo "$0: --session: expected an opaque id (letters, digits, ._:@#+=/-), got $session" >&2
    exit 2 ;;
esac
boundary=b-$(hex 8)
# One trace per boundary: the pre span is its root, every other span of the boundary its child,
# so a collector routing by trace id brings them all to one continuity serve.
trace=$(hex 16)
pre_id=$(hex 8)

# "<epoch seconds> <RFC 3339 UTC>" of the same instant, from one date call.
now() { date -u '+%s %Y-%m-%dT%H:%M:%SZ'; }

# One OTLP/JSON attribute. str KEY VALUE, int KEY N, bool KEY true|false.
str() { printf '{"key":"%s","value":{"stringValue":"%s"}}' "$1" "$2"; }
int() { printf '{"key":"%s","value":{"intValue":"%s"}}' "$1" "$2"; } # int64 as a string
bool() { printf '{"key":"%s","value":{"boolValue":%s}}' "$1" "$2"; }

# The per-decision attributes: decision NAME DIGEST OBSERVED_AT [APPROVAL_REF [REVISION]]
decision() {
  printf '%s,%s,%s' \
    "$(str "continuity.decision.$1.digest" "$2")" \
    "$(int "continuity.decision.$1.revision" "${5:-1}")" \
    "$(str "continuity.decision.$1.observed_at" "$3")"
  [ -z "${4:-}" ] || printf ',%s' "$(str "continuity.decision.$1.approval_ref" "$4")"
}

# What pre and post spans share: the session key, the boundary, the runtime, the trigger,
# the normalizer version, the capture time and the decision names. snapshot CAPTURED_AT
snapshot() {
  printf '%s,%s,%s,%s,%s,%s,%s' \
    "$(str session.id "$session")" \
    "$(str continuity.boundary.id "$boundary")" \
    "$(str continuity.runtime "$RUNTIME")" \
    "$(str continuity.compaction.trigger auto)" \
    "$(int continuity.normalizer.version 1)" \
    "$(str continuity.captured_at "$1")" \
    '{"key":"continuity.decision.names","value":{"arrayValue":{"values":[{"stringValue":"scope"},{"stringValue":"target"},{"stringValue":"acceptance_test"}]}}}'
}

# One span of the boundary's trace: span NAME START_SECONDS SPAN_ID PARENT_SPAN_ID ATTRIBUTES
# (kind 1 = INTERNAL; a point in time; an empty PARENT_SPAN_ID makes the root)
span() {
  printf '{"traceId":"%s","spanId":"%s","parentSpanId":"%s","name":"%s","kind":1,"startTimeUnixNano":"%s000000000","endTimeUnixNano":"%s000000000","attributes":[%s],"status":{}}' \
    "$trace" "$3" "$4" "$1" "$2" "$2" "$5"
}

# One export request: the agent's resource (session.id there too, for a collector that routes
# by session), one instrumentation scope, the spans. request SPANS
request() {
  printf '{"resourceSpans":[{"resource":{"attributes":[%s,%s]},"scopeSpans":[{"scope":{"name":"%s"},"spans":[%s]}]}]}' \
    "$(str service.name "$RUNTIME")" "$(str session.id "$session")" "$RUNTIME" "$1"
}

# POSTs one request; fails on a status other than 200 or on spans refused in a partial success.
# curl retries 408, 429, 500, 502, 503, 504 and timeouts, honouring Retry-After (not a refused connection).
send() {
  nl='
'
  out=$(printf '%s' "$2" | curl -sS --max-time 10 --retry 3 --retry-max-time 30 \
    -H 'Content-Type: application/json' --data-binary @- -w "$nl%{http_code}" "$endpoint") || {
    echo "$0: $1: could not reach $endpoint" >&2
    exit 1
  }
  status=${out##*"$nl"}
  body=${out%"$nl"*}
  if [ "$status" != 200 ]; then
    echo "$0: $1: $endpoint answered $status: $body" >&2
    exit 1
  fi
  if printf '%s' "$body" | grep -Eq '"rejectedSpans" *: *"?[1-9]'; then
    echo "$0: $1: spans refused: $body" >&2
    exit 1
  fi
  echo "$1: sent (session $session, boundary $boundary)"
}

# ── Before compaction: the pre span, with the decisions as the agent holds them ──────────────
set -- $(now)
pre_s=$1 pre_at=$2
send continuity.compaction.pre "$(request "$(span continuity.compaction.pre "$pre_s" "$pre_id" '' \
  "$(snapshot "$pre_at"),$(decision scope "$SCOPE_DIGEST" "$pre_at"),$(decision target "$TARGET_DIGEST" "$pre_at"),$(decision acceptance_test "$ACCEPTANCE_TEST_DIGEST" "$pre_at")")")"

# The runtime compacts its context. A post observation counts only when it is strictly later
# than the boundary, and these timestamps have whole seconds: wait one.
sleep 1

# ── After compaction: the decisions as the agent now states them ─────────────────────────────
scope_digest=$SCOPE_DIGEST scope_ref= scope_revision=1
if [ "$variant" != unchanged ]; then
  scope_digest=$WIDER_SCOPE_DIGEST
fi
if [ "$variant" = approved-scope ]; then
  # A human approved the change from the old scope to the new one (an opaque reference and
  # approver id; the approval itself happened elsewhere, e.g. `continuity approve`).
  set -- $(now)
  approval_s=$1 approval_at=$2
  scope_ref=CHG-1234 scope_revision=2
  proof=
  if [ -n "${CONTINUITY_APPROVAL_SIGNER:-}" ]; then
    # The approver's key id and signature, from the signer the human controls.
    set -- $($CONTINUITY_APPROVAL_SIGNER "$session" "$boundary" scope "$SCOPE_DIGEST" \
      "$WIDER_SCOPE_DIGEST" "$scope_ref" alice "$approval_at")
    [ $# -eq 2 ] || { echo "$0: CONTINUITY_APPROVAL_SIGNER: expected KEY_ID SIGNATURE" >&2; exit 1; }
    proof=",$(str continuity.approval.boundary_id "$boundary"),$(str continuity.approval.key_id "$1"),$(str continuity.approval.signature "$2")"
  fi
  send continuity.approval "$(request "$(span continuity.approval "$approval_s" "$(hex 8)" "$pre_id" \
    "$(str session.id "$session"),$(str continuity.approval.decision scope),$(str continuity.approval.from_digest "$SCOPE_DIGEST"),$(str continuity.approval.to_digest "$WIDER_SCOPE_DIGEST"),$(str continuity.approval.ref "$scope_ref"),$(str continuity.approval.approved_by alice),$(str continuity.approval.approved_at "$approval_at")$proof")")"
fi

set -- $(now)
post_s=$1 post_at=$2
activity=$(span continuity.activity "$post_s" "$(hex 8)" "$pre_id" "$(str session.id "$session"),$(str continuity.activity.state working)")
post=$(span continuity.compaction.post "$post_s" "$(hex 8)" "$pre_id" \
  "$(snapshot "$post_at"),$(bool gen_ai.conversation.compacted true),$(decision scope "$scope_digest" "$post_at" "$scope_ref" "$scope_revision"),$(decision target "$TARGET_DIGEST" "$post_at"),$(decision acceptance_test "$ACCEPTANCE_TEST_DIGEST" "$post_at")")
send continuity.compaction.post "$(request "$activity,$post")"
