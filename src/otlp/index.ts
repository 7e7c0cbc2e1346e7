/**
 * OTLP codec: the protobuf schema written in this project, decode/encode of OTLP/HTTP bodies
 * (protobuf and JSON) for traces and metrics, and attribute helpers.
 */
export {
  anyValueToAttribute,
  attributesToRecord,
  attributeToAnyValue,
  recordToAttributes,
  upsertAttributes,
} from './attributes.js';
export {
  decodeMetricsRequest,
  decodeMetricsResponse,
  decodeSpan,
  decodeTraceRequest,
  decodeTraceResponse,
  encodeMetricsRequest,
  encodeMetricsResponse,
  encodeSpan,
  encodeTraceRequest,
  encodeTraceResponse,
} from './codec.js';
export { MAX_DEPTH } from './convert.js';
export { OTLP_DESCRIPTOR, OTLP_MESSAGES } from './descriptor.js';
export type { OtlpErrorCode } from './errors.js';
export { OtlpError } from './errors.js';
export { otlpRoot } from './schema.js';
export type {
  OtlpAnyValue,
  OtlpEntityRef,
  OtlpExemplar,
  OtlpExponentialHistogramBuckets,
  OtlpExponentialHistogramDataPoint,
  OtlpFormat,
  OtlpHistogramDataPoint,
  OtlpInstrumentationScope,
  OtlpKeyValue,
  OtlpMetric,
  OtlpMetricsRequest,
  OtlpMetricsResponse,
  OtlpNumberDataPoint,
  OtlpResource,
  OtlpResourceMetrics,
  OtlpResourceSpans,
  OtlpScopeMetrics,
  OtlpScopeSpans,
  OtlpSpan,
  OtlpSpanEvent,
  OtlpSpanLink,
  OtlpStatus,
  OtlpSummaryDataPoint,
  OtlpTraceRequest,
  OtlpTraceResponse,
} from './types.js';
