// Issue 50.4: per-runner metric families beyond the five with columns are kept as delivered (the notes: "treat
// family names and labels as data"), in `other` on the runner's first row; before, they were dropped. Oracle: an
// exposition written by hand.
import { describe, expect, it } from 'vitest';
import { parseExposition } from '../../src/promtext/index.js';
import { mapRunnerSamples } from '../../src/collectors/runner-metrics.js';

const EXPOSITION = [
  '# TYPE svc_runner_cpu_seconds_total counter',
  'svc_runner_cpu_seconds_total{runner_id="r1",application="acme/img",machine_type="GPU-A100"} 12.5',
  '# TYPE svc_runner_memory_bytes gauge',
  'svc_runner_memory_bytes{runner_id="r1",application="acme/img",machine_type="GPU-A100"} 1024',
  '# TYPE svc_runner_gpu_utilization gauge',
  'svc_runner_gpu_utilization{runner_id="r1",application="acme/img",machine_type="GPU-A100",gpu="0"} 0.5',
  '# TYPE svc_runner_gpu_temperature_celsius gauge',
  'svc_runner_gpu_temperature_celsius{runner_id="r1",application="acme/img",machine_type="GPU-A100",gpu="0"} 61',
  '# TYPE svc_runner_disk_bytes gauge',
  'svc_runner_disk_bytes{runner_id="r1",application="acme/img",machine_type="GPU-A100"} 2048',
  '',
].join('\n');

describe('unknown runner metric families (issue 50.4)', () => {
  it('are kept raw on the first row, the known ones in their columns', () => {
    const rejects: string[] = [];
    const rows = mapRunnerSamples('r1', parseExposition(EXPOSITION, 'text/plain; version=0.0.4'), '2026-11-21 12:00:00.000', '2026-11-21 12:00:01.000', (r) => rejects.push(r));
    expect(rejects).toEqual([]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ gpu: 0, cpu_seconds_total: 12.5, memory_bytes: 1024, gpu_utilization: 0.5 });
    expect(JSON.parse(String(rows[0].other))).toEqual([
      { name: 'svc_runner_gpu_temperature_celsius', labels: { runner_id: 'r1', application: 'acme/img', machine_type: 'GPU-A100', gpu: '0' }, value: 61 },
      { name: 'svc_runner_disk_bytes', labels: { runner_id: 'r1', application: 'acme/img', machine_type: 'GPU-A100' }, value: 2048 },
    ]);
  });

  it('leaves other unset when the exposition holds only the known families', () => {
    const known = EXPOSITION.split('\n').filter((l) => !/temperature|disk/.test(l)).join('\n');
    const rows = mapRunnerSamples('r1', parseExposition(known, 'text/plain; version=0.0.4'), '2026-11-21 12:00:00.000', '2026-11-21 12:00:01.000', () => undefined);
    expect(rows[0].other).toBeUndefined();
  });
});
