/**
 * Where a continuity span made through a tracer (the SDK extension, the Claude Agent SDK adapter
 * with the application's provider) goes, and its links to the agent's active span, both ways.
 *
 * - A span of a boundary whose pre span this process made (`home`) is a child of that pre span: the
 *   boundary's spans share its trace, which trace-id routing keeps on one `continuity serve`.
 * - Otherwise (a pre span, or a span of no known boundary) it joins the agent's trace as a child of
 *   the active span when there is one and it is sampled, else it is the root of a trace of its own.
 *   Either way its parent is a span that exists.
 * - The span links to the agent's active span when that span is not its parent, and the agent's
 *   span, while it is still recording, gets a link back (`Span.addLink`, in the API since 1.9, the
 *   lowest version of the peer range). An agent span that has ended can take nothing more; the
 *   link from the continuity span is then the only way between them.
 * - Continuity spans are evidence: if the app's sampler refuses every placement above, the span is
 *   started under a remote, sampled parent with the derived ids of `boundary-trace.ts` (`fallback`),
 *   so it is still recorded and exported; that parent is never emitted (a trace viewer shows a
 *   missing root), which one `diag.warn` says, with the remedy.
 *
 * `api` is passed in: the Claude Agent SDK adapter loads the application's copy on first use.
 */
import type * as Api from '@opentelemetry/api';
import type { Attributes, HrTime, Link, Span, SpanContext, Tracer } from '@opentelemetry/api';

/** The parts of `@opentelemetry/api` placement uses. */
export type PlacementApi = Pick<typeof Api, 'context' | 'trace' | 'diag'>;

/** What {@link startPlacedSpan} needs besides the tracer. */
export interface Placement {
  /** The pre span of the boundary this span belongs to, when this process made it. */
  home?: SpanContext;
  /** Ids for the remote parent used only when the sampler refuses every other placement. */
  fallback: { traceId: string; spanId: string };
}

/** Options of the span itself. */
export interface PlacedSpanOptions {
  attributes?: Attributes;
  startTime?: HrTime;
  /** Links besides the one to the agent's span (e.g. a post span's link to its pre span). */
  links?: Link[];
}

const SAMPLED = 1; // TraceFlags.SAMPLED, without a value import of the api
const INTERNAL = 0; // SpanKind.INTERNAL
let warnedFallback = false;

function sampled(span: Span): boolean {
  return (span.spanContext().traceFlags & SAMPLED) === SAMPLED;
}

/**
 * Starts `name` where the module comment says, in the active context (so baggage and the like
 * carry over), and links it to the agent's active span both ways.
 */
export function startPlacedSpan(
  api: PlacementApi,
  tracer: Tracer,
  name: string,
  options: PlacedSpanOptions,
  placement: Placement,
): Span {
  const active = api.context.active();
  const agentSpan = api.trace.getSpan(active);
  const agent = agentSpan?.spanContext();
  const agentValid = agent !== undefined && api.trace.isSpanContextValid(agent);
  // Each candidate: the parent context, and whether its parent is the agent's span.
  const candidates: Array<{ parent: Api.Context; underAgent: boolean }> = [];
  if (placement.home) {
    candidates.push({ parent: api.trace.setSpanContext(active, placement.home), underAgent: false });
  } else {
    if (agentValid && (agent.traceFlags & SAMPLED) === SAMPLED) {
      candidates.push({ parent: active, underAgent: true });
    }
    candidates.push({ parent: api.trace.deleteSpan(active), underAgent: false });
  }
  const start = (parent: Api.Context, underAgent: boolean): Span => {
    const links = [...(options.links ?? [])];
    if (agentValid && !underAgent) links.push({ context: agent });
    return tracer.startSpan(
      name,
      {
        kind: INTERNAL,
        ...(options.attributes && { attributes: options.attributes }),
        ...(options.startTime && { startTime: options.startTime }),
        links,
      },
      parent,
    );
  };
  let span: Span | undefined;
  let underAgent = false;
  // A refused attempt is dropped without end(): a non-recording span has nothing to end, and
  // ending a recorded-but-unsampled one would hand the processors a second copy of the evidence.
  for (const c of candidates) {
    span = start(c.parent, c.underAgent);
    underAgent = c.underAgent;
    if (sampled(span)) break;
  }
  if (!sampled(span!)) {
    const remote = api.trace.setSpanContext(active, {
      ...placement.fallback,
      traceFlags: SAMPLED,
      isRemote: true,
    });
    const fallback = start(remote, false);
    if (sampled(fallback)) {
      span = fallback;
      underAgent = false;
      if (!warnedFallback) {
        warnedFallback = true;
        api.diag.warn(
          'agent-continuity: the sampler refused a continuity span as a root or child; it is recorded under a remote parent no span carries (trace views show a missing root). Sample continuity.* spans always (e.g. ParentBased with a root sampler that keeps them)',
        );
      }
    }
  }
  // Only to a span that is exported; a child is already in the agent's view, no link needed.
  if (
    agentValid &&
    !underAgent &&
    sampled(span!) &&
    agentSpan!.isRecording() &&
    typeof agentSpan!.addLink === 'function'
  ) {
    agentSpan!.addLink({ context: span!.spanContext() });
  }
  return span!;
}
