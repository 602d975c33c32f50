// The parser's public shapes. The scrape collector is written against these names: keep them.

/** 'untyped' is the 0.0.4 type of a family without a TYPE line (or TYPE untyped); 'unknown' is OpenMetrics'. */
export type MetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'gaugehistogram'
  | 'summary'
  | 'info'
  | 'stateset'
  | 'unknown'
  | 'untyped';

export type ExpositionFormat = 'prometheus-0.0.4' | 'openmetrics-1.0';

export interface Exemplar {
  labels: Record<string, string>;
  value: number;
  /** OpenMetrics exemplar timestamps are seconds; normalised to milliseconds (truncated, as Prometheus does). */
  timestampMs: number | null;
}

export interface Sample {
  /** Full sample name, e.g. http_request_duration_seconds_bucket. */
  name: string;
  /** Includes le / quantile (normalised as Prometheus does for histograms / summaries). */
  labels: Record<string, string>;
  /** NaN / ±Infinity allowed. */
  value: number;
  /** Normalised to milliseconds: 0.0.4 timestamps are integer ms, OpenMetrics ones float seconds. */
  timestampMs: number | null;
  /** The metric family name (the TYPE/HELP name), e.g. http_request_duration_seconds. */
  family: string;
  type: MetricType;
  help: string | null;
  unit?: string | null;
  exemplar?: Exemplar | null;
}

/** The whole exposition is rejected, as Prometheus fails the scrape; `line` is 1-based. */
export class ExpositionError extends Error {
  readonly line: number;
  readonly reason: string;

  constructor(line: number, reason: string) {
    super(`line ${line}: ${reason}`);
    this.name = 'ExpositionError';
    this.line = line;
    this.reason = reason;
  }
}
