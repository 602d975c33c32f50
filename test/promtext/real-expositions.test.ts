import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseExposition, type Sample } from '../../src/promtext/index.js';

// Expositions written by programs nobody here wrote, and the scrape_samples_scraped that a real
// Prometheus (2.42.0) reported for each: see fixtures/README.md.
const fixture = (name: string): string => readFileSync(fileURLToPath(new URL(`fixtures/${name}`, import.meta.url)), 'utf8');
const TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const OM = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

describe('real expositions: as many samples as Prometheus scraped', () => {
  it('prometheus-node-exporter 1.5.0: 507', () => {
    const samples = parseExposition(fixture('node-exporter-1.5.0.prom.txt'), TEXT);
    expect(samples).toHaveLength(507);
    expect(find(samples, 'go_gc_duration_seconds', { quantile: '0.5' })).toMatchObject({ family: 'go_gc_duration_seconds', type: 'summary' });
    expect(find(samples, 'node_cpu_seconds_total', { cpu: '0', mode: 'idle' })).toMatchObject({ family: 'node_cpu_seconds_total', type: 'counter' });
    expect(find(samples, 'node_uname_info')?.labels).toMatchObject({ machine: 'x86_64', sysname: 'Linux' });
    // node-exporter declares its netstat/vmstat fields "# TYPE ... untyped" itself.
    expect(find(samples, 'node_vmstat_oom_kill')).toMatchObject({ type: 'untyped', help: '/proc/vmstat information field oom_kill.' });
    expect(samples.filter((s) => s.help === null)).toHaveLength(0);
  });

  it("Prometheus 2.42.0's own /metrics: 295", () => {
    const samples = parseExposition(fixture('prometheus-2.42.0.prom.txt'), TEXT);
    expect(samples).toHaveLength(295);
    const buckets = samples.filter((s) => s.name === 'prometheus_http_request_duration_seconds_bucket' && s.labels.handler === '/metrics');
    // Prometheus 3 normalisation: le="1" → "1.0", le="120" → "120.0".
    expect(buckets.map((s) => s.labels.le)).toEqual(['0.1', '0.2', '0.4', '1.0', '3.0', '8.0', '20.0', '60.0', '120.0', '+Inf']);
    expect(buckets.every((s) => s.family === 'prometheus_http_request_duration_seconds' && s.type === 'histogram')).toBe(true);
  });

  it('Python client 0.16.0, OpenMetrics (with _created, exemplars, info, stateset, UNIT): 351', () => {
    const samples = parseExposition(fixture('python-client-0.16.0.om.txt'), OM);
    expect(samples).toHaveLength(351);
    const created = samples.filter((s) => s.name.endsWith('_created'));
    expect(created).toHaveLength(44);
    expect(samples.filter((s) => s.exemplar)).toHaveLength(27);
    expect(find(samples, 'build_info')).toMatchObject({
      family: 'build',
      type: 'info',
      labels: { version: '1.2.3', revision: 'abc"def\\ghi', note: 'line\nbreak' },
    });
    expect(find(samples, 'worker_state', { worker_state: 'running' })).toMatchObject({ type: 'stateset', value: 1 });
    expect(find(samples, 'gpu_temperature_celsius', { gpu: '0' })).toMatchObject({ unit: 'celsius', value: 61.5 });
    expect(find(samples, 'gpu_temperature_celsius', { gpu: '1' })?.value).toBeNaN();
    const withExemplar = samples.find((s) => s.exemplar)!;
    expect(withExemplar.family).toBe('http_request_duration_seconds');
    expect(withExemplar.exemplar?.timestampMs).toBeGreaterThan(1.7e12);
  });

  it('the same registry in 0.0.4 text: 351, with _created as gauges of their own', () => {
    const samples = parseExposition(fixture('python-client-0.16.0.prom.txt'), TEXT);
    expect(samples).toHaveLength(351);
    expect(find(samples, 'http_requests_created')).toMatchObject({ family: 'http_requests_created', type: 'gauge' });
  });
});
