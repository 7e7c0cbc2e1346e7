/**
 * The plain-object shape of decoded OTLP requests: the OTLP/JSON mapping, made uniform.
 *
 * Whatever the wire format (protobuf or JSON), a decoded request has:
 * - trace and span ids as lower-case hex strings (`''` when absent, e.g. a root span's parent);
 * - 64-bit integers (timestamps, `intValue`, `asInt`, counts) as decimal strings;
 * - enums as integers; 32-bit integers and doubles as numbers; `bytesValue` as base64;
 * - every scalar present with its proto3 default, every repeated field as an array;
 * - message fields, oneof members and `optional` fields only when they were set.
 */

/** One of the AnyValue members, or none (an empty value). */
export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  /** int64 as a decimal string. */
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values: OtlpAnyValue[] };
  kvlistValue?: { values: OtlpKeyValue[] };
  /** Base64 (standard alphabet, padded). */
  bytesValue?: string;
}

export interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

export interface OtlpInstrumentationScope {
  name: string;
  version: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
}

export interface OtlpEntityRef {
  schemaUrl: string;
  type: string;
  idKeys: string[];
  descriptionKeys: string[];
}

export interface OtlpResource {
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
  entityRefs: OtlpEntityRef[];
}

export interface OtlpSpanEvent {
  timeUnixNano: string;
  name: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
}

export interface OtlpSpanLink {
  /** 32 lower-case hex characters. */
  traceId: string;
  /** 16 lower-case hex characters. */
  spanId: string;
  traceState: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
  flags: number;
}

export interface OtlpStatus {
  message: string;
  /** 0 unset, 1 ok, 2 error. */
  code: number;
}

export interface OtlpSpan {
  /** 32 lower-case hex characters. */
  traceId: string;
  /** 16 lower-case hex characters. */
  spanId: string;
  traceState: string;
  /** 16 lower-case hex characters, or `''` for a root span. */
  parentSpanId: string;
  flags: number;
  name: string;
  /** 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** Nanoseconds since the Unix epoch, decimal string. */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
  events: OtlpSpanEvent[];
  droppedEventsCount: number;
  links: OtlpSpanLink[];
  droppedLinksCount: number;
  status?: OtlpStatus;
}

export interface OtlpScopeSpans {
  scope?: OtlpInstrumentationScope;
  spans: OtlpSpan[];
  schemaUrl: string;
}

export interface OtlpResourceSpans {
  resource?: OtlpResource;
  scopeSpans: OtlpScopeSpans[];
  schemaUrl: string;
}

/** opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest */
export interface OtlpTraceRequest {
  resourceSpans: OtlpResourceSpans[];
}

/** opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse */
export interface OtlpTraceResponse {
  partialSuccess?: {
    /** int64 as a decimal string. */
    rejectedSpans: string;
    errorMessage: string;
  };
}

export interface OtlpExemplar {
  filteredAttributes: OtlpKeyValue[];
  timeUnixNano: string;
  asDouble?: number;
  asInt?: string;
  spanId: string;
  traceId: string;
}

export interface OtlpNumberDataPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  asDouble?: number;
  /** int64 as a decimal string. */
  asInt?: string;
  exemplars: OtlpExemplar[];
  flags: number;
}

export interface OtlpHistogramDataPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum?: number;
  bucketCounts: string[];
  explicitBounds: number[];
  exemplars: OtlpExemplar[];
  flags: number;
  min?: number;
  max?: number;
}

export interface OtlpExponentialHistogramBuckets {
  offset: number;
  bucketCounts: string[];
}

export interface OtlpExponentialHistogramDataPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum?: number;
  scale: number;
  zeroCount: string;
  positive?: OtlpExponentialHistogramBuckets;
  negative?: OtlpExponentialHistogramBuckets;
  flags: number;
  exemplars: OtlpExemplar[];
  min?: number;
  max?: number;
  zeroThreshold: number;
}

export interface OtlpSummaryDataPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum: number;
  quantileValues: { quantile: number; value: number }[];
  flags: number;
}

export interface OtlpMetric {
  name: string;
  description: string;
  unit: string;
  gauge?: { dataPoints: OtlpNumberDataPoint[] };
  /** aggregationTemporality: 1 delta, 2 cumulative. */
  sum?: { dataPoints: OtlpNumberDataPoint[]; aggregationTemporality: number; isMonotonic: boolean };
  histogram?: { dataPoints: OtlpHistogramDataPoint[]; aggregationTemporality: number };
  exponentialHistogram?: { dataPoints: OtlpExponentialHistogramDataPoint[]; aggregationTemporality: number };
  summary?: { dataPoints: OtlpSummaryDataPoint[] };
  metadata: OtlpKeyValue[];
}

export interface OtlpScopeMetrics {
  scope?: OtlpInstrumentationScope;
  metrics: OtlpMetric[];
  schemaUrl: string;
}

export interface OtlpResourceMetrics {
  resource?: OtlpResource;
  scopeMetrics: OtlpScopeMetrics[];
  schemaUrl: string;
}

/** opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest */
export interface OtlpMetricsRequest {
  resourceMetrics: OtlpResourceMetrics[];
}

/** opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse */
export interface OtlpMetricsResponse {
  partialSuccess?: {
    rejectedDataPoints: string;
    errorMessage: string;
  };
}

/** The two OTLP/HTTP encodings. */
export type OtlpFormat = 'protobuf' | 'json';
