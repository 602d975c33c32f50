import type { JobContext } from './job.js';
import { isPlatformError } from '../platform/index.js';
import { ExpositionError, parseExposition, type Sample } from '../promtext/index.js';
import { runnerIdsToScrape, runnerMetrics, type RunnerMetricRow } from '../store/tables/runner-metrics.js';
import { toDateTime64 } from '../values.js';
import { collectorRejects, commitRows, mapLimit, tableWrite } from './common.js';

/** Reads of one runner's exposition before a body cut short is given up (stored in ingest_rejects). */
const TEXT_ATTEMPTS = 5;

export interface RunnerMetricsResult {
  /** Runners asked for. */
  runners: number;
  /** Runners that answered (rows stored for them). */
  scraped: number;
  /** Runners the platform answered 404 for: gone since their id was seen, not an error. */
  gone: number;
  rows: number;
  rejected: number;
}

/** Runner ids worth asking for: seen in runner_started events or requests since `sinceMs`, with no end event. */
export async function runnersToScrape(ctx: JobContext, sinceMs: number, endpointIds: readonly string[]): Promise<Array<{ runner_id: string; endpoint_id: string }>> {
  return runnerIdsToScrape(ctx.runtime.store, { since: new Date(sinceMs).toISOString(), endpoint_ids: [...endpointIds] });
}

/**
 * Scrapes GET /metrics/runners/{runner_id} for each runner, at most `concurrency` at once (the client's
 * PLATFORM_MAX_IN_FLIGHT bounds all calls too), and stores one row per runner, scrape and GPU. A 404 means the
 * runner is gone: counted, not an error. Resolves once every row is committed.
 */
export async function collectRunnerMetrics(ctx: JobContext, runnerIds: readonly string[], concurrency: number): Promise<RunnerMetricsResult> {
  const scrapedAt = toDateTime64(ctx.now());
  const collectedAt = toDateTime64(Date.now());
  const rejects = collectorRejects('runner-metrics');
  let gone = 0;
  const perRunner = await mapLimit(runnerIds, concurrency, async (runnerId): Promise<RunnerMetricRow[]> => {
    let text = '';
    let contentType: string | null = null;
    // The text format has no end marker: a body cut short (a dropped connection behind a proxy) still parses. Every
    // line of a whole exposition ends with a line feed, so a body that does not is read again.
    for (let attempt = 1; attempt <= TEXT_ATTEMPTS; attempt++) {
      try {
        ({ body: text, contentType } = await ctx.platform.getText(`/metrics/runners/${encodeURIComponent(runnerId)}`, { ctx: ctx.call }));
      } catch (err) {
        if (isPlatformError(err) && err.status === 404) {
          gone++;
          return [];
        }
        throw err;
      }
      if (text.endsWith('\n')) break;
    }
    if (!text.endsWith('\n')) {
      rejects.add({ runner_id: runnerId, body: text.slice(0, 65_536) }, `exposition: cut short (no final line feed) in ${TEXT_ATTEMPTS} reads`);
      return [];
    }
    let samples: Sample[];
    try {
      samples = parseExposition(text, contentType);
    } catch (err) {
      if (!(err instanceof ExpositionError)) throw err;
      rejects.add({ runner_id: runnerId, body: text.slice(0, 65_536) }, `exposition: ${err.message}`);
      return [];
    }
    return mapRunnerSamples(runnerId, samples, scrapedAt, collectedAt, (reason) => rejects.add({ runner_id: runnerId }, reason));
  });
  const rows = perRunner.flat();
  const rejected = rejects.rows.length;
  await commitRows(ctx, [tableWrite(runnerMetrics, rows)], rejects, { runners: runnerIds.length });
  return { runners: runnerIds.length, scraped: perRunner.filter((r) => r.length > 0).length, gone, rows: rows.length, rejected };
}

const FAMILIES = {
  svc_runner_gpu_utilization: 'gpu_utilization',
  svc_runner_vram_used_bytes: 'vram_used_bytes',
  svc_runner_vram_total_bytes: 'vram_total_bytes',
} as const;

/** The families with a column of their own (the five of the platform notes). */
const KNOWN_RUNNER_FAMILIES: ReadonlySet<string> = new Set([...Object.keys(FAMILIES), 'svc_runner_cpu_seconds_total', 'svc_runner_memory_bytes']);

/** One row per GPU (the runner-level CPU and memory on GPU 0's row), or one row with gpu -1 for a machine without GPU. */
export function mapRunnerSamples(runnerId: string, samples: readonly Sample[], ts: string, collectedAt: string, reject: (reason: string) => void): RunnerMetricRow[] {
  const mine = samples.filter((s) => s.labels.runner_id === runnerId);
  const first = mine.find((s) => s.labels.application);
  const application = first?.labels.application ?? '';
  const slash = application.indexOf('/');
  if (!first || slash <= 0) {
    reject('no sample labelled with this runner_id and an application owner/name');
    return [];
  }
  const machineType = first.labels.machine_type ?? '';
  const value = (name: string): number | null => {
    const s = mine.find((x) => x.name === name);
    return s && Number.isFinite(s.value) ? s.value : null;
  };
  const gpus = new Map<number, RunnerMetricRow>();
  const base = {
    runner_id: runnerId, owner: application.slice(0, slash), name: application.slice(slash + 1), endpoint_id: application,
    machine_type: machineType, ts, collected_at: collectedAt,
  };
  // Families the notes do not name (or a platform adds later) are data too (issue 50.4): kept raw, never dropped.
  const other: Array<{ name: string; labels: Record<string, string>; value: number | string }> = [];
  for (const s of mine) {
    const column = FAMILIES[s.name as keyof typeof FAMILIES];
    if (!column) {
      if (!KNOWN_RUNNER_FAMILIES.has(s.name)) other.push({ name: s.name, labels: s.labels, value: Number.isFinite(s.value) ? s.value : String(s.value) });
      continue;
    }
    const gpu = Number(s.labels.gpu);
    if (!Number.isInteger(gpu) || gpu < 0 || gpu > 32_767) {
      reject(`${s.name}: gpu label is not a GPU index`);
      continue;
    }
    let row = gpus.get(gpu);
    if (!row) gpus.set(gpu, (row = { ...base, gpu, cpu_seconds_total: null, memory_bytes: null, gpu_utilization: null, vram_used_bytes: null, vram_total_bytes: null }));
    row[column] = Number.isFinite(s.value) ? s.value : null;
  }
  const rows = [...gpus.values()].sort((a, b) => a.gpu - b.gpu);
  if (rows.length === 0) rows.push({ ...base, gpu: -1, cpu_seconds_total: null, memory_bytes: null, gpu_utilization: null, vram_used_bytes: null, vram_total_bytes: null });
  rows[0].cpu_seconds_total = value('svc_runner_cpu_seconds_total');
  rows[0].memory_bytes = value('svc_runner_memory_bytes');
  if (other.length > 0) rows[0].other = JSON.stringify(other);
  return rows;
}
