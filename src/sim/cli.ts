// `tallyhouse sim [options]` serves the simulator until SIGINT/SIGTERM; `tallyhouse sim truth ...` prints the
// ground truth as JSON and exits. Wired into src/main.ts by its owner.
import { parseArgs } from 'node:util';
import { describeArgsError, didYouMean } from '../suggest.js';
import { startSim, DEFAULT_NOW } from './index.js';
import { SimModel } from './model.js';
import { Webhooks } from './webhooks.js';
import { Drain } from './drain.js';
import { createTruth } from './truth.js';
import { formatNanos, RawJson, toJson } from './money.js';
import { RETRYABLE_FAULTS, ALL_FAULTS, type FaultKind } from './faults.js';
import { isValidZone, TIMEFRAMES, type Timeframe } from './time.js';
import { readScenarioFile, ScenarioError, scenarioTruth, type Scenario } from './scenario.js';

const SERVE_USAGE = `usage: tallyhouse sim [--port N] [--host H] [--seed N] [--now ISO] [--days N] [--apps N]
                      [--requests-per-hour N] [--fault-rate P] [--fault-kinds k1,k2] [--slow-ms N]
                      [--api-key K] [--admin-key K] [--webhook-url U] [--drain-url U] [--drain-secret S]
                      [--drain-malformed-rate P] [--realtime] [--strict-interface]
                      [--scenario FILE]   (injected events, JSON: see src/sim/README.md, "Scenarios")
       tallyhouse sim truth --from DATE --to DATE [--timezone TZ] [--kind usage|requests]
                      [--group-by app,environment,machine_type,surge,day | endpoint,day] [--timeframe T]
                      [--seed N] [--now ISO] [--days N] [--apps N] [--requests-per-hour N]`;

const WORLD_OPTIONS = {
  seed: { type: 'string' },
  now: { type: 'string' },
  days: { type: 'string' },
  apps: { type: 'string' },
  'requests-per-hour': { type: 'string' },
  scenario: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

function num(name: string, v: string | undefined, def: number, min = 0): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new UsageError(`--${name}: expected a number ≥ ${min}, got '${v}'`);
  return n;
}

function worldOptions(values: Record<string, string | boolean | undefined>) {
  const now = (values.now as string | undefined) ?? DEFAULT_NOW;
  if (!Number.isFinite(Date.parse(now))) throw new UsageError(`--now: expected an ISO 8601 datetime, got '${now}'`);
  return {
    seed: num('seed', values.seed as string | undefined, 1),
    now,
    days: num('days', values.days as string | undefined, 35, 1),
    apps: num('apps', values.apps as string | undefined, 60, 1),
    requestsPerHour: num('requests-per-hour', values['requests-per-hour'] as string | undefined, 20),
    scenario: scenarioOption(values.scenario as string | undefined),
  };
}

function scenarioOption(path: string | undefined): Scenario | undefined {
  if (path === undefined) return undefined;
  try {
    return readScenarioFile(path);
  } catch (err) {
    throw new UsageError(`--scenario: ${(err as Error).message}`);
  }
}

export async function simCommand(argv: string[]): Promise<number> {
  try {
    if (argv[0] === 'truth') return truthCommand(argv.slice(1));
    return await serveCommand(argv);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ScenarioError) {
      process.stderr.write(`tallyhouse sim: ${err.message}\n${SERVE_USAGE}\n`);
      return 2;
    }
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      // An unknown option or a misspelt `truth` gets "did you mean" (src/suggest.ts).
      const options = [...new Set([...SERVE_USAGE.matchAll(/--([a-z-]+)/g)].map((m) => m[1]))];
      const stray = /^Unexpected argument '([^']+)'/.exec((err as Error).message)?.[1];
      const message = stray !== undefined ? `unknown subcommand ${JSON.stringify(stray)}${didYouMean(stray, ['truth'])}` : describeArgsError(err, options);
      process.stderr.write(`tallyhouse sim: ${message}\n${SERVE_USAGE}\n`);
      return 2;
    }
    throw err;
  }
}

async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      ...WORLD_OPTIONS,
      port: { type: 'string' },
      host: { type: 'string' },
      'fault-rate': { type: 'string' },
      'fault-kinds': { type: 'string' },
      'slow-ms': { type: 'string' },
      'api-key': { type: 'string' },
      'admin-key': { type: 'string' },
      'webhook-url': { type: 'string' },
      'drain-url': { type: 'string' },
      'drain-secret': { type: 'string' },
      'drain-malformed-rate': { type: 'string' },
      realtime: { type: 'boolean' },
      'strict-interface': { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(SERVE_USAGE + '\n');
    return 0;
  }
  const faultRate = num('fault-rate', values['fault-rate'], 0);
  if (faultRate > 1) throw new UsageError('--fault-rate: expected a probability from 0 to 1');
  let faultKinds: FaultKind[] = RETRYABLE_FAULTS;
  if (values['fault-kinds']) {
    faultKinds = values['fault-kinds'].split(',').map((k) => k.trim()) as FaultKind[];
    for (const k of faultKinds) if (!ALL_FAULTS.includes(k)) throw new UsageError(`--fault-kinds: unknown kind '${k}'; expected ${ALL_FAULTS.join(', ')}`);
  }
  const sim = await startSim({
    ...worldOptions(values),
    port: num('port', values.port, 0),
    host: values.host,
    faultRate,
    faultKinds,
    slowMs: num('slow-ms', values['slow-ms'], 30_000),
    apiKey: values['api-key'],
    adminKey: values['admin-key'],
    webhookUrl: values['webhook-url'],
    drainUrl: values['drain-url'],
    drainSecret: values['drain-secret'],
    drainMalformedRate: num('drain-malformed-rate', values['drain-malformed-rate'], 0),
    realtime: values.realtime ?? false,
    strictInterface: values['strict-interface'] ?? false,
    // A standalone simulator: nobody in this process reads the call log, and its memory is worth watching.
    requestLogLimit: 0,
    selfMetrics: true,
  });
  // The sandbox prints its keys on purpose: they are throwaway keys of a local simulator, and a newcomer needs them.
  process.stdout.write(
    [
      `simulator listening on ${sim.url}`,
      `  SVC_BASE_URL=${sim.url}`,
      `  SVC_API_KEY=${sim.keys.api}`,
      `  SVC_ADMIN_KEY=${sim.keys.admin}`,
      `  LOG_DRAIN_SECRET=${sim.drain.secret}`,
      `  virtual now: ${sim.clock.now().toISOString()} (POST ${sim.url}/_sim/clock with the admin key to move it)`,
      `  apps: ${sim.world.apps.filter((a) => a.ownedByCaller).length} owned, seed ${sim.world.seed}`,
      ...(scenarioTruth(sim.world).name ? [`  scenario: ${scenarioTruth(sim.world).name}, ${scenarioTruth(sim.world).events.length} events (GET ${sim.url}/_sim/truth?kind=scenario)`] : []),
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sim.close();
  return 0;
}

const USAGE_DIMS = ['app', 'owner', 'environment', 'machine_type', 'surge', 'day'] as const;
const REQUEST_DIMS = ['endpoint', 'day'] as const;

function truthCommand(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      ...WORLD_OPTIONS,
      from: { type: 'string' },
      to: { type: 'string' },
      timezone: { type: 'string' },
      timeframe: { type: 'string' },
      kind: { type: 'string' },
      'group-by': { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(SERVE_USAGE + '\n');
    return 0;
  }
  if (!values.from || !values.to) throw new UsageError('sim truth: --from and --to are required');
  const timezone = values.timezone ?? 'UTC';
  if (!isValidZone(timezone)) throw new UsageError(`--timezone: not an IANA time zone: '${timezone}'`);
  const kind = values.kind ?? 'usage';
  if (kind !== 'usage' && kind !== 'requests') throw new UsageError(`--kind: expected usage or requests, got '${kind}'`);
  const timeframe = (values.timeframe ?? 'day') as Timeframe;
  if (!TIMEFRAMES.includes(timeframe)) throw new UsageError(`--timeframe: expected one of ${TIMEFRAMES.join(', ')}`);
  const allowed: readonly string[] = kind === 'usage' ? USAGE_DIMS : REQUEST_DIMS;
  const groupBy = (values['group-by'] ?? (kind === 'usage' ? 'app,machine_type,surge,day' : 'endpoint,day')).split(',').map((s) => s.trim()).filter(Boolean);
  for (const d of groupBy) if (!allowed.includes(d)) throw new UsageError(`--group-by: '${d}' is not one of ${allowed.join(', ')}`);

  const w = worldOptions(values);
  const model = new SimModel({ ...w, nowMs: Date.parse(w.now) });
  const truth = createTruth(model, new Webhooks(model), new Drain(model, { secret: 'unused' }));
  const q = { from: values.from, to: values.to, timezone };
  let rows: Array<Record<string, unknown>>;
  if (kind === 'usage') {
    const groups = new Map<string, { key: Record<string, unknown>; quantity: number; sub: bigint; disc: bigint; total: bigint }>();
    for (const r of truth.usage({ ...q, timeframe })) {
      const key: Record<string, unknown> = {};
      for (const d of groupBy) {
        key[d] = d === 'surge' ? r.is_surge : d === 'day' ? r.bucket : r[d as 'app' | 'owner' | 'environment' | 'machine_type'];
      }
      const id = JSON.stringify(key);
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { key, quantity: 0, sub: 0n, disc: 0n, total: 0n }));
      g.quantity += r.quantity;
      g.sub += BigInt(r.cost_subtotal_nanos);
      g.disc += BigInt(r.cost_discount_nanos);
      g.total += BigInt(r.cost_total_nanos);
    }
    rows = [...groups.values()].map((g) => ({
      ...g.key,
      quantity: g.quantity,
      cost_subtotal_nanos: new RawJson(g.sub.toString()),
      cost_discount_nanos: new RawJson(g.disc.toString()),
      cost_total_nanos: new RawJson(g.total.toString()),
      cost_total: new RawJson(formatNanos(g.total)),
    }));
  } else {
    const groups = new Map<string, Record<string, number | string>>();
    for (const r of truth.requests(q)) {
      const key: Record<string, string> = {};
      if (groupBy.includes('endpoint')) key.endpoint_id = r.endpoint_id;
      if (groupBy.includes('day')) key.day = r.day;
      const id = JSON.stringify(key);
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { ...key, request_count: 0, billed_count: 0, unbilled_count: 0, billable_units_billed_milli: 0, billable_units_all_milli: 0 }));
      g.request_count = (g.request_count as number) + r.request_count;
      g.billed_count = (g.billed_count as number) + r.billed_count;
      g.unbilled_count = (g.unbilled_count as number) + r.unbilled_count;
      g.billable_units_billed_milli = (g.billable_units_billed_milli as number) + r.billable_units_billed_milli;
      g.billable_units_all_milli = (g.billable_units_all_milli as number) + r.billable_units_all_milli;
    }
    rows = [...groups.values()];
  }
  process.stdout.write(toJson({ kind, from: values.from, to: values.to, timezone, group_by: groupBy, now: model.clock.now().toISOString(), seed: w.seed, rows }) + '\n');
  return 0;
}
