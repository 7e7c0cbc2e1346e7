"""A Python agent for `npm run test:stack`: the OpenTelemetry Python SDK with its OTLP/gRPC
exporters (opentelemetry-sdk, opentelemetry-exporter-otlp-proto-grpc from PyPI), reporting
compaction boundaries as examples/otlp-json/README.md says, digests from
examples/otlp-json/continuity_digest.py.

Reads a JSON list of sessions on stdin, each {"session": id, "script": one of preserved,
approved_change, conflicting, dropped_approval, dropped_test, no_post}, and runs them interleaved:
every session's agent turn starts, every pre span is sent, then the approvals, then the posts, so
the gateway sees the sessions mixed in its batches. Each session's continuity spans are children
of its own agent span `agent.turn` (one trace per session turn). Also emits one log record per
session and a counter, through the OTLP log and metric exporters, to the same endpoint.

Prints one JSON line: {"agentSpans": {session: [traceId, spanId]}, "sent": n}.
"""
import json
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.environ["CONTINUITY_DIGEST_DIR"])
from continuity_digest import digest  # noqa: E402

from opentelemetry import trace  # noqa: E402
from opentelemetry._logs import SeverityNumber  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

RUNTIME = os.environ.get("AGENT_RUNTIME", "python-agent")
ENDPOINT = os.environ["AGENT_OTLP_ENDPOINT"]  # host:port of the gateway's OTLP/gRPC receiver

SCOPE = {"repository": "acme/payments", "paths": ["services/ledger"]}
WIDER = {"repository": "acme/payments", "paths": ["services/ledger", "services/billing"]}
TARGET = "fix/ledger-lock"
OTHER_TARGET = "main"
TEST = {"command": "pytest tests/ledger", "must_pass": True}
APPROVAL = {"deploy": "human"}


def rfc3339(t):
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def snapshot_attributes(session, boundary, decisions, at):
    attrs = {
        "session.id": session,
        "continuity.boundary.id": boundary,
        "continuity.runtime": RUNTIME,
        "continuity.compaction.trigger": "auto",
        "continuity.normalizer.version": 1,
        "continuity.captured_at": rfc3339(at),
        "continuity.decision.names": list(decisions),
    }
    for name, (value, revision, ref) in decisions.items():
        attrs[f"continuity.decision.{name}.digest"] = digest(value)
        attrs[f"continuity.decision.{name}.revision"] = revision
        attrs[f"continuity.decision.{name}.observed_at"] = rfc3339(at)
        if ref:
            attrs[f"continuity.decision.{name}.approval_ref"] = ref
    return attrs


def pre_decisions():
    return {
        "scope": (SCOPE, 1, None),
        "target": (TARGET, 1, None),
        "acceptance_test": (TEST, 1, None),
        "approval_boundary": (APPROVAL, 1, None),
    }


def post_decisions(script):
    d = pre_decisions()
    if script == "approved_change":
        d["scope"] = (WIDER, 2, "CHG-1")
    elif script == "conflicting":
        d["target"] = (OTHER_TARGET, 1, None)
    elif script == "dropped_approval":
        del d["approval_boundary"]
    elif script == "dropped_test":
        del d["acceptance_test"]
    return d


def main():
    sessions = json.load(sys.stdin)
    resource = Resource.create({"service.name": "python-agent"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=ENDPOINT, insecure=True)))
    tracer = tracer_provider.get_tracer("python-agent")
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=ENDPOINT, insecure=True)))
    logger = logger_provider.get_logger("python-agent")
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=ENDPOINT, insecure=True), export_interval_millis=1000)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    turns = meter_provider.get_meter("python-agent").create_counter("python_agent.turns", unit="{turn}")

    started = datetime.now(timezone.utc)
    turn = {}
    for s in sessions:
        span = tracer.start_span("agent.turn", attributes={"session.id": s["session"]})
        turn[s["session"]] = span
    ctx = {sid: trace.set_span_in_context(span) for sid, span in turn.items()}
    sent = 0
    for s in sessions:
        attrs = snapshot_attributes(s["session"], s["session"] + "-b1", pre_decisions(), started)
        tracer.start_span("continuity.compaction.pre", context=ctx[s["session"]], attributes=attrs).end()
        sent += 1
    time.sleep(0.05)  # the post observation is strictly after the boundary
    for s in sessions:
        if s["script"] == "approved_change":
            at = rfc3339(datetime.now(timezone.utc))
            attrs = {
                "session.id": s["session"],
                "continuity.approval.decision": "scope",
                "continuity.approval.from_digest": digest(SCOPE),
                "continuity.approval.to_digest": digest(WIDER),
                "continuity.approval.ref": "CHG-1",
                "continuity.approval.approved_by": "alice",
                "continuity.approval.approved_at": at,
            }
            signer = os.environ.get("CONTINUITY_APPROVAL_SIGNER")
            if signer:
                # The human's signature of the approval statement (docs/security.md), from the
                # signer they control: unsigned, serve counts the approval only as an attempt.
                boundary = s["session"] + "-b1"
                out = subprocess.run(
                    shlex.split(signer) + [s["session"], boundary, "scope", digest(SCOPE), digest(WIDER), "CHG-1", "alice", at],
                    check=True, capture_output=True, text=True,
                ).stdout.split()
                attrs["continuity.approval.boundary_id"] = boundary
                attrs["continuity.approval.key_id"] = out[0]
                attrs["continuity.approval.signature"] = out[1]
            tracer.start_span("continuity.approval", context=ctx[s["session"]], attributes=attrs).end()
            sent += 1
    time.sleep(0.05)
    for s in sessions:
        if s["script"] == "no_post":
            continue
        at = datetime.now(timezone.utc) + timedelta(milliseconds=1)
        attrs = snapshot_attributes(s["session"], s["session"] + "-b1", post_decisions(s["script"]), at)
        attrs["gen_ai.conversation.compacted"] = True
        tracer.start_span("continuity.compaction.post", context=ctx[s["session"]], attributes=attrs).end()
        sent += 1
    for s in sessions:
        # An ordinary tool call of the turn, failing in the conflicting sessions (span metrics' errors).
        tool = tracer.start_span("tool.call", context=ctx[s["session"]])
        if s["script"] == "conflicting":
            tool.set_status(Status(StatusCode.ERROR, "tool failed"))
        tool.end()
        sent += 1
    for sid, span in turn.items():
        span.end()
        sent += 1
        turns.add(1, {"continuity.runtime": RUNTIME})
        logger.emit(
            timestamp=time.time_ns(),
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            body="agent turn finished",
            attributes={"session.id": sid},
        )
    out = {
        "agentSpans": {
            sid: [format(span.get_span_context().trace_id, "032x"), format(span.get_span_context().span_id, "016x")]
            for sid, span in turn.items()
        },
        "sent": sent,
    }
    tracer_provider.shutdown()
    logger_provider.shutdown()
    meter_provider.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
