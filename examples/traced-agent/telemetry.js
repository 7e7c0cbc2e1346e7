// @ts-check
/**
 * The agent's OpenTelemetry setup, as it was before continuity: NodeSDK, OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set (OTEL_EXPORTER_OTLP_PROTOCOL picks http/json or
 * http/protobuf), nothing to export otherwise. The lines marked `+ continuity` are the only change:
 * the processor goes first, before the exporter's batch processor, so the check spans it emits at
 * shutdown still reach the exporter.
 */
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ContinuityProcessor } from 'agent-continuity'; // + continuity

/** Starts the SDK; returns it so the agent can shut it down (which flushes) before exiting. */
export function startTelemetry() {
  const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const json = process.env.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json';
  const spanProcessors = [];
  spanProcessors.push(new ContinuityProcessor()); // + continuity (first)
  /** @type {PeriodicExportingMetricReader[]} */
  const metricReaders = [];
  if (endpoint) {
    spanProcessors.push(
      new BatchSpanProcessor(json ? new OTLPTraceExporterJson() : new OTLPTraceExporterProto()),
    );
    metricReaders.push(
      new PeriodicExportingMetricReader({
        exporter: json ? new OTLPMetricExporterJson() : new OTLPMetricExporterProto(),
        exportIntervalMillis: 60_000,
      }),
    );
  }
  const sdk = new NodeSDK({ serviceName: 'traced-agent', spanProcessors, metricReaders });
  sdk.start();
  return sdk;
}
