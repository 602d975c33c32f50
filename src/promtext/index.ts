// Prometheus text exposition parser: 0.0.4 text and OpenMetrics 1.0 text, chosen by content type.
// See README.md for what is accepted, how samples are counted and where we differ from Prometheus.

import { ExpositionParser } from './parse.js';
import type { ExpositionFormat, MetricType, Sample } from './model.js';

export { ExpositionError } from './model.js';
export type { Exemplar, ExpositionFormat, MetricType, Sample } from './model.js';
export { formatOpenMetricsFloat } from './floats.js';

/**
 * Prometheus' choice (model/textparse interface.go): the media type application/openmetrics-text
 * (any parameters, any case) is OpenMetrics; anything else, a missing one included, is 0.0.4 text,
 * as with Prometheus' fallback_scrape_protocol PrometheusText0.0.4.
 */
export function detectFormat(contentType?: string | null): ExpositionFormat {
  if (!contentType) return 'prometheus-0.0.4';
  const semicolon = contentType.indexOf(';');
  const mediaType = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/openmetrics-text' ? 'openmetrics-1.0' : 'prometheus-0.0.4';
}

/**
 * Every sample line of the exposition, in order. Throws ExpositionError (line number and reason)
 * on the first malformed line: the whole exposition is rejected, as a Prometheus scrape fails.
 */
export function parseExposition(text: string, contentType?: string | null): Sample[] {
  return new ExpositionParser(text, detectFormat(contentType) === 'openmetrics-1.0').parse();
}

export interface SampleJson {
  name: string;
  labels: Record<string, string>;
  value: number | 'NaN' | '+Inf' | '-Inf';
  timestamp_ms: number | null;
  type: MetricType;
  help: string | null;
}

/** The NDJSON shape of `tallyhouse scrape --dry-run`: JSON has no NaN/Infinity, so they become strings. */
export function sampleToJson(s: Sample): SampleJson {
  const v = s.value;
  // Stryker disable next-line EqualityOperator: v is infinite there, never 0, so > 0 and >= 0 agree
  const value: SampleJson['value'] = Number.isFinite(v) ? v : Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf';
  return { name: s.name, labels: s.labels, value, timestamp_ms: s.timestampMs, type: s.type, help: s.help };
}
