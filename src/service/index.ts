/**
 * agent-continuity/service: `continuity serve`, the OTLP (HTTP and gRPC) processor stage for a collector
 * pipeline (receiver, enrichment through the correlator, durable pending state, forwarder).
 * Explicit exports only.
 */

// → backend: `continuity serve`, the OTLP processor service (HTTP and gRPC receivers, durable pending state, forwarder)
export type { LoadConfigOptions, OtlpProtocol, ServiceConfig, ServiceConfigInput } from './config.js';
export { loadServiceConfig, SERVICE_DEFAULTS, ServiceConfigSchema } from './config.js';
export type { Frame, SpanSite, Walked, WalkResult } from './splice.js';
export { splice, walkTraceRequest } from './splice.js';
export type { ContinuityMetricsRecorder, StartOptions } from './service.js';
export { ContinuityService } from './service.js';
