/**
 * The OTLP protobuf schema, written in this project as a protobufjs JSON descriptor.
 *
 * Field numbers and types follow the OpenTelemetry protocol definitions in
 * open-telemetry/opentelemetry-proto (checked against the upstream files):
 * - opentelemetry/proto/common/v1/common.proto     AnyValue, ArrayValue, KeyValueList, KeyValue,
 *                                                  InstrumentationScope, EntityRef
 * - opentelemetry/proto/resource/v1/resource.proto Resource
 * - opentelemetry/proto/trace/v1/trace.proto       ResourceSpans, ScopeSpans, Span (+ Event, Link),
 *                                                  Status
 * - opentelemetry/proto/collector/trace/v1/trace_service.proto
 *                                                  ExportTraceServiceRequest/Response,
 *                                                  ExportTracePartialSuccess
 * - opentelemetry/proto/metrics/v1/metrics.proto   ResourceMetrics ... Exemplar
 * - opentelemetry/proto/collector/metrics/v1/metrics_service.proto
 *                                                  ExportMetricsServiceRequest/Response,
 *                                                  ExportMetricsPartialSuccess
 *
 * Field names are the lowerCamelCase names of the OTLP/JSON mapping. A descriptor without a
 * `syntax`/`edition` is read by protobufjs with proto3 semantics (packed repeated scalars,
 * implicit presence); `proto3_optional` marks the few fields with explicit presence.
 * Loaded with `protobufjs/light`, so no .proto parser is needed at run time.
 */

const KV = 'opentelemetry.proto.common.v1.KeyValue';
const OPTIONAL = { proto3_optional: true } as const;

/** The protobufjs JSON descriptor of the OTLP trace and metrics export services. */
export const OTLP_DESCRIPTOR = {
  nested: {
    opentelemetry: {
      nested: {
        proto: {
          nested: {
            common: {
              nested: {
                v1: {
                  nested: {
                    AnyValue: {
                      oneofs: {
                        value: {
                          oneof: [
                            'stringValue',
                            'boolValue',
                            'intValue',
                            'doubleValue',
                            'arrayValue',
                            'kvlistValue',
                            'bytesValue',
                          ],
                        },
                      },
                      fields: {
                        stringValue: { type: 'string', id: 1 },
                        boolValue: { type: 'bool', id: 2 },
                        intValue: { type: 'int64', id: 3 },
                        doubleValue: { type: 'double', id: 4 },
                        arrayValue: { type: 'ArrayValue', id: 5 },
                        kvlistValue: { type: 'KeyValueList', id: 6 },
                        bytesValue: { type: 'bytes', id: 7 },
                      },
                    },
                    ArrayValue: {
                      fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } },
                    },
                    KeyValueList: {
                      fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } },
                    },
                    KeyValue: {
                      fields: {
                        key: { type: 'string', id: 1 },
                        value: { type: 'AnyValue', id: 2 },
                      },
                    },
                    InstrumentationScope: {
                      fields: {
                        name: { type: 'string', id: 1 },
                        version: { type: 'string', id: 2 },
                        attributes: { rule: 'repeated', type: 'KeyValue', id: 3 },
                        droppedAttributesCount: { type: 'uint32', id: 4 },
                      },
                    },
                    EntityRef: {
                      fields: {
                        schemaUrl: { type: 'string', id: 1 },
                        type: { type: 'string', id: 2 },
                        idKeys: { rule: 'repeated', type: 'string', id: 3 },
                        descriptionKeys: { rule: 'repeated', type: 'string', id: 4 },
                      },
                    },
                  },
                },
              },
            },
            resource: {
              nested: {
                v1: {
                  nested: {
                    Resource: {
                      fields: {
                        attributes: { rule: 'repeated', type: KV, id: 1 },
                        droppedAttributesCount: { type: 'uint32', id: 2 },
                        entityRefs: {
                          rule: 'repeated',
                          type: 'opentelemetry.proto.common.v1.EntityRef',
                          id: 3,
                        },
                      },
                    },
                  },
                },
              },
            },
            trace: {
              nested: {
                v1: {
                  nested: {
                    ResourceSpans: {
                      fields: {
                        resource: { type: 'opentelemetry.proto.resource.v1.Resource', id: 1 },
                        scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    ScopeSpans: {
                      fields: {
                        scope: { type: 'opentelemetry.proto.common.v1.InstrumentationScope', id: 1 },
                        spans: { rule: 'repeated', type: 'Span', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    Span: {
                      fields: {
                        traceId: { type: 'bytes', id: 1 },
                        spanId: { type: 'bytes', id: 2 },
                        traceState: { type: 'string', id: 3 },
                        parentSpanId: { type: 'bytes', id: 4 },
                        flags: { type: 'fixed32', id: 16 },
                        name: { type: 'string', id: 5 },
                        kind: { type: 'SpanKind', id: 6 },
                        startTimeUnixNano: { type: 'fixed64', id: 7 },
                        endTimeUnixNano: { type: 'fixed64', id: 8 },
                        attributes: { rule: 'repeated', type: KV, id: 9 },
                        droppedAttributesCount: { type: 'uint32', id: 10 },
                        events: { rule: 'repeated', type: 'Event', id: 11 },
                        droppedEventsCount: { type: 'uint32', id: 12 },
                        links: { rule: 'repeated', type: 'Link', id: 13 },
                        droppedLinksCount: { type: 'uint32', id: 14 },
                        status: { type: 'Status', id: 15 },
                      },
                      nested: {
                        SpanKind: {
                          values: {
                            SPAN_KIND_UNSPECIFIED: 0,
                            SPAN_KIND_INTERNAL: 1,
                            SPAN_KIND_SERVER: 2,
                            SPAN_KIND_CLIENT: 3,
                            SPAN_KIND_PRODUCER: 4,
                            SPAN_KIND_CONSUMER: 5,
                          },
                        },
                        Event: {
                          fields: {
                            timeUnixNano: { type: 'fixed64', id: 1 },
                            name: { type: 'string', id: 2 },
                            attributes: { rule: 'repeated', type: KV, id: 3 },
                            droppedAttributesCount: { type: 'uint32', id: 4 },
                          },
                        },
                        Link: {
                          fields: {
                            traceId: { type: 'bytes', id: 1 },
                            spanId: { type: 'bytes', id: 2 },
                            traceState: { type: 'string', id: 3 },
                            attributes: { rule: 'repeated', type: KV, id: 4 },
                            droppedAttributesCount: { type: 'uint32', id: 5 },
                            flags: { type: 'fixed32', id: 6 },
                          },
                        },
                      },
                    },
                    Status: {
                      // Field 1 is reserved upstream (the removed deprecated_code).
                      fields: {
                        message: { type: 'string', id: 2 },
                        code: { type: 'StatusCode', id: 3 },
                      },
                      nested: {
                        StatusCode: {
                          values: { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 },
                        },
                      },
                    },
                  },
                },
              },
            },
            metrics: {
              nested: {
                v1: {
                  nested: {
                    ResourceMetrics: {
                      fields: {
                        resource: { type: 'opentelemetry.proto.resource.v1.Resource', id: 1 },
                        scopeMetrics: { rule: 'repeated', type: 'ScopeMetrics', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    ScopeMetrics: {
                      fields: {
                        scope: { type: 'opentelemetry.proto.common.v1.InstrumentationScope', id: 1 },
                        metrics: { rule: 'repeated', type: 'Metric', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    Metric: {
                      oneofs: {
                        data: { oneof: ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary'] },
                      },
                      fields: {
                        name: { type: 'string', id: 1 },
                        description: { type: 'string', id: 2 },
                        unit: { type: 'string', id: 3 },
                        gauge: { type: 'Gauge', id: 5 },
                        sum: { type: 'Sum', id: 7 },
                        histogram: { type: 'Histogram', id: 9 },
                        exponentialHistogram: { type: 'ExponentialHistogram', id: 10 },
                        summary: { type: 'Summary', id: 11 },
                        metadata: { rule: 'repeated', type: KV, id: 12 },
                      },
                    },
                    Gauge: {
                      fields: { dataPoints: { rule: 'repeated', type: 'NumberDataPoint', id: 1 } },
                    },
                    Sum: {
                      fields: {
                        dataPoints: { rule: 'repeated', type: 'NumberDataPoint', id: 1 },
                        aggregationTemporality: { type: 'AggregationTemporality', id: 2 },
                        isMonotonic: { type: 'bool', id: 3 },
                      },
                    },
                    Histogram: {
                      fields: {
                        dataPoints: { rule: 'repeated', type: 'HistogramDataPoint', id: 1 },
                        aggregationTemporality: { type: 'AggregationTemporality', id: 2 },
                      },
                    },
                    ExponentialHistogram: {
                      fields: {
                        dataPoints: { rule: 'repeated', type: 'ExponentialHistogramDataPoint', id: 1 },
                        aggregationTemporality: { type: 'AggregationTemporality', id: 2 },
                      },
                    },
                    Summary: {
                      fields: { dataPoints: { rule: 'repeated', type: 'SummaryDataPoint', id: 1 } },
                    },
                    AggregationTemporality: {
                      values: {
                        AGGREGATION_TEMPORALITY_UNSPECIFIED: 0,
                        AGGREGATION_TEMPORALITY_DELTA: 1,
                        AGGREGATION_TEMPORALITY_CUMULATIVE: 2,
                      },
                    },
                    NumberDataPoint: {
                      oneofs: { value: { oneof: ['asDouble', 'asInt'] } },
                      fields: {
                        attributes: { rule: 'repeated', type: KV, id: 7 },
                        startTimeUnixNano: { type: 'fixed64', id: 2 },
                        timeUnixNano: { type: 'fixed64', id: 3 },
                        asDouble: { type: 'double', id: 4 },
                        asInt: { type: 'sfixed64', id: 6 },
                        exemplars: { rule: 'repeated', type: 'Exemplar', id: 5 },
                        flags: { type: 'uint32', id: 8 },
                      },
                    },
                    HistogramDataPoint: {
                      oneofs: {
                        _sum: { oneof: ['sum'] },
                        _min: { oneof: ['min'] },
                        _max: { oneof: ['max'] },
                      },
                      fields: {
                        attributes: { rule: 'repeated', type: KV, id: 9 },
                        startTimeUnixNano: { type: 'fixed64', id: 2 },
                        timeUnixNano: { type: 'fixed64', id: 3 },
                        count: { type: 'fixed64', id: 4 },
                        sum: { type: 'double', id: 5, options: OPTIONAL },
                        bucketCounts: { rule: 'repeated', type: 'fixed64', id: 6 },
                        explicitBounds: { rule: 'repeated', type: 'double', id: 7 },
                        exemplars: { rule: 'repeated', type: 'Exemplar', id: 8 },
                        flags: { type: 'uint32', id: 10 },
                        min: { type: 'double', id: 11, options: OPTIONAL },
                        max: { type: 'double', id: 12, options: OPTIONAL },
                      },
                    },
                    ExponentialHistogramDataPoint: {
                      oneofs: {
                        _sum: { oneof: ['sum'] },
                        _min: { oneof: ['min'] },
                        _max: { oneof: ['max'] },
                      },
                      fields: {
                        attributes: { rule: 'repeated', type: KV, id: 1 },
                        startTimeUnixNano: { type: 'fixed64', id: 2 },
                        timeUnixNano: { type: 'fixed64', id: 3 },
                        count: { type: 'fixed64', id: 4 },
                        sum: { type: 'double', id: 5, options: OPTIONAL },
                        scale: { type: 'sint32', id: 6 },
                        zeroCount: { type: 'fixed64', id: 7 },
                        positive: { type: 'Buckets', id: 8 },
                        negative: { type: 'Buckets', id: 9 },
                        flags: { type: 'uint32', id: 10 },
                        exemplars: { rule: 'repeated', type: 'Exemplar', id: 11 },
                        min: { type: 'double', id: 12, options: OPTIONAL },
                        max: { type: 'double', id: 13, options: OPTIONAL },
                        zeroThreshold: { type: 'double', id: 14 },
                      },
                      nested: {
                        Buckets: {
                          fields: {
                            offset: { type: 'sint32', id: 1 },
                            bucketCounts: { rule: 'repeated', type: 'uint64', id: 2 },
                          },
                        },
                      },
                    },
                    SummaryDataPoint: {
                      fields: {
                        attributes: { rule: 'repeated', type: KV, id: 7 },
                        startTimeUnixNano: { type: 'fixed64', id: 2 },
                        timeUnixNano: { type: 'fixed64', id: 3 },
                        count: { type: 'fixed64', id: 4 },
                        sum: { type: 'double', id: 5 },
                        quantileValues: { rule: 'repeated', type: 'ValueAtQuantile', id: 6 },
                        flags: { type: 'uint32', id: 8 },
                      },
                      nested: {
                        ValueAtQuantile: {
                          fields: {
                            quantile: { type: 'double', id: 1 },
                            value: { type: 'double', id: 2 },
                          },
                        },
                      },
                    },
                    Exemplar: {
                      oneofs: { value: { oneof: ['asDouble', 'asInt'] } },
                      fields: {
                        filteredAttributes: { rule: 'repeated', type: KV, id: 7 },
                        timeUnixNano: { type: 'fixed64', id: 2 },
                        asDouble: { type: 'double', id: 3 },
                        asInt: { type: 'sfixed64', id: 6 },
                        spanId: { type: 'bytes', id: 4 },
                        traceId: { type: 'bytes', id: 5 },
                      },
                    },
                  },
                },
              },
            },
            collector: {
              nested: {
                trace: {
                  nested: {
                    v1: {
                      nested: {
                        ExportTraceServiceRequest: {
                          fields: {
                            resourceSpans: {
                              rule: 'repeated',
                              type: 'opentelemetry.proto.trace.v1.ResourceSpans',
                              id: 1,
                            },
                          },
                        },
                        ExportTraceServiceResponse: {
                          fields: { partialSuccess: { type: 'ExportTracePartialSuccess', id: 1 } },
                        },
                        ExportTracePartialSuccess: {
                          fields: {
                            rejectedSpans: { type: 'int64', id: 1 },
                            errorMessage: { type: 'string', id: 2 },
                          },
                        },
                      },
                    },
                  },
                },
                metrics: {
                  nested: {
                    v1: {
                      nested: {
                        ExportMetricsServiceRequest: {
                          fields: {
                            resourceMetrics: {
                              rule: 'repeated',
                              type: 'opentelemetry.proto.metrics.v1.ResourceMetrics',
                              id: 1,
                            },
                          },
                        },
                        ExportMetricsServiceResponse: {
                          fields: { partialSuccess: { type: 'ExportMetricsPartialSuccess', id: 1 } },
                        },
                        ExportMetricsPartialSuccess: {
                          fields: {
                            rejectedDataPoints: { type: 'int64', id: 1 },
                            errorMessage: { type: 'string', id: 2 },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
} as const;

/** Fully qualified names of the top-level messages this project reads and writes. */
export const OTLP_MESSAGES = {
  traceRequest: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
  traceResponse: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
  metricsRequest: 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
  metricsResponse: 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse',
} as const;
