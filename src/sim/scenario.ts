// Simulator scenarios (issue 32.5): events injected into the seeded world from a JSON file, each a pure function
// of the world and the time, so the truth (which reads the same world) knows them and reruns answer the same
// bytes. The truth endpoint lists them (`GET /_sim/truth?kind=scenario`).
//
// Kinds (times are ISO 8601 UTC, `to` exclusive and optional):
//   volume       { target, from, to?, factor }       request/call volume of an endpoint or app (or '*') x factor
//   price        { endpoint, from, unit_price }      a model endpoint's unit price (decimal, its currency) from `from`
//   runaway_key  { api_key_id, endpoint?, from, to?, factor }
//                model calls x factor from `from`, the added share (1 - 1/factor) made with that API key
//   errors       { target, from, to?, error_rate }   an app's (or endpoint's) error rate from `from`
//   latency      { target, from, to?, factor }       durations x factor from `from`
//   new_endpoint { endpoint, from }                  a model endpoint with no calls before `from`
//   holiday      { from, to, factor? }               every endpoint's volume x factor (default 0.2): a quiet day
import { readFileSync } from 'node:fs';
import type { Endpoint, World } from './world.js';
import { hashString, unit } from './prng.js';

export interface ScenarioEventInput {
  kind: 'volume' | 'price' | 'runaway_key' | 'errors' | 'latency' | 'new_endpoint' | 'holiday';
  /** An endpoint id (`owner/app`, `owner/app/route`, `svc-ai/flux-dev`), an app `owner/name`, or '*'. */
  target?: string;
  endpoint?: string;
  from: string;
  to?: string;
  factor?: number;
  unit_price?: string;
  error_rate?: number;
  api_key_id?: string;
  note?: string;
}

export interface ScenarioInput {
  name?: string;
  events: ScenarioEventInput[];
}

interface Compiled {
  kind: ScenarioEventInput['kind'];
  target: string;
  fromMs: number;
  toMs: number;
  factor: number;
  priceNanos: number;
  errorRate: number;
  apiKeyId: string;
}

export interface Scenario {
  name: string;
  /** The events as given (validated), in file order: what the truth lists. */
  events: ScenarioEventInput[];
  compiled: Compiled[];
}

/** A scenario that cannot be used: its message names the event and field. */
export class ScenarioError extends Error {}

const KINDS = ['volume', 'price', 'runaway_key', 'errors', 'latency', 'new_endpoint', 'holiday'] as const;

function time(v: unknown, what: string): number {
  const ms = typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw new ScenarioError(`scenario: ${what}: expected an ISO 8601 time`);
  return ms;
}

/** Decimal text to integer nanos, exactly (at most 9 decimals). */
function nanos(v: unknown, what: string): number {
  const m = typeof v === 'string' ? /^(\d+)(?:\.(\d{1,9}))?$/.exec(v) : null;
  if (!m) throw new ScenarioError(`scenario: ${what}: expected a decimal string with at most 9 decimals, e.g. "0.035"`);
  return Number(m[1]) * 1e9 + Number((m[2] ?? '').padEnd(9, '0'));
}

/** Validates a scenario (a parsed JSON value); errors name the event and field. */
export function parseScenario(value: unknown): Scenario {
  const v = value as ScenarioInput;
  if (!v || typeof v !== 'object' || !Array.isArray(v.events)) throw new Error('scenario: expected {"events": [...]}');
  const compiled = v.events.map((e, i): Compiled => {
    const at = `events[${i}]`;
    if (!e || !KINDS.includes(e.kind)) throw new ScenarioError(`scenario: ${at}.kind: expected one of ${KINDS.join(', ')}`);
    const fromMs = time(e.from, `${at}.from`);
    const toMs = e.to === undefined ? Infinity : time(e.to, `${at}.to`);
    if (toMs <= fromMs) throw new ScenarioError(`scenario: ${at}.to: expected a time after from`);
    const factor = e.factor ?? (e.kind === 'holiday' ? 0.2 : 1);
    if (!(typeof factor === 'number' && factor >= 0 && factor <= 1000)) throw new ScenarioError(`scenario: ${at}.factor: expected a number from 0 to 1000`);
    const target = e.kind === 'holiday' ? '*' : e.endpoint ?? e.target ?? (e.kind === 'runaway_key' ? '*' : '');
    if (!target) throw new ScenarioError(`scenario: ${at}: expected target (or endpoint)`);
    if ((e.kind === 'price' || e.kind === 'new_endpoint') && !e.endpoint) throw new ScenarioError(`scenario: ${at}.endpoint: required for ${e.kind}`);
    if (e.kind === 'holiday' && e.to === undefined) throw new ScenarioError(`scenario: ${at}.to: required for holiday`);
    const priceNanos = e.kind === 'price' ? nanos(e.unit_price, `${at}.unit_price`) : 0;
    const errorRate = e.kind === 'errors' ? Number(e.error_rate) : 0;
    if (e.kind === 'errors' && !(errorRate >= 0 && errorRate <= 1)) throw new ScenarioError(`scenario: ${at}.error_rate: expected a number from 0 to 1`);
    if (e.kind === 'runaway_key' && !(typeof e.api_key_id === 'string' && e.api_key_id)) throw new ScenarioError(`scenario: ${at}.api_key_id: required for runaway_key`);
    if (e.kind === 'runaway_key' && factor < 1) throw new ScenarioError(`scenario: ${at}.factor: a runaway key adds calls (factor >= 1)`);
    return { kind: e.kind, target, fromMs, toMs, factor, priceNanos, errorRate, apiKeyId: e.api_key_id ?? '' };
  });
  return { name: typeof v.name === 'string' ? v.name : 'scenario', events: v.events.map((e) => ({ ...e })), compiled };
}

export function readScenarioFile(path: string): Scenario {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScenarioError(`scenario: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ScenarioError(`scenario: ${path} is not JSON`);
  }
  return parseScenario(json);
}

const scenarios = new WeakMap<World, Scenario>();

/** Binds a scenario to a world before anything is generated from it. */
export function attachScenario(world: World, scenario: Scenario, apiKeyIds: string[]): void {
  for (const [i, c] of scenario.compiled.entries()) {
    if (c.kind === 'runaway_key' && !apiKeyIds.includes(c.apiKeyId)) throw new ScenarioError(`scenario: events[${i}].api_key_id: expected one of ${apiKeyIds.join(', ')}`);
  }
  const known = new Set([...world.endpoints.map((e) => e.id), ...world.apps.map((a) => `${a.owner}/${a.name}`)]);
  for (const [i, c] of scenario.compiled.entries()) {
    if (c.target !== '*' && !known.has(c.target)) throw new ScenarioError(`scenario: events[${i}]: no endpoint or app ${c.target} in this world`);
  }
  scenarios.set(world, scenario);
}

export function scenarioOf(world: World): Scenario | null {
  return scenarios.get(world) ?? null;
}

function matches(c: Compiled, ep: Endpoint, world: World): boolean {
  if (c.target === '*') return c.kind !== 'runaway_key' || ep.isModel;
  if (c.target === ep.id) return true;
  if (ep.isModel) return false;
  const app = world.apps[ep.appIndex];
  return c.target === `${app.owner}/${app.name}`;
}

/** The factor on an endpoint's mean request count in an hour (1 without a scenario). */
export function volumeFactor(world: World, ep: Endpoint, hour: number): number {
  const s = scenarios.get(world);
  if (!s) return 1;
  const t = hour * 3_600_000;
  let f = 1;
  for (const c of s.compiled) {
    if (t < c.fromMs && c.kind === 'new_endpoint' && c.target === ep.id) f = 0;
    if (t < c.fromMs || t >= c.toMs) continue;
    if ((c.kind === 'volume' || c.kind === 'runaway_key' || c.kind === 'holiday') && matches(c, ep, world)) f *= c.factor;
  }
  return f;
}

/** A scenario's unit price of a model endpoint at a time, in nanos, or null (the world's own price). */
export function priceOverrideNanos(world: World, ep: Endpoint, tMs: number): number | null {
  const s = scenarios.get(world);
  if (!s) return null;
  let price: number | null = null;
  for (const c of s.compiled) if (c.kind === 'price' && c.target === ep.id && tMs >= c.fromMs && tMs < c.toMs) price = c.priceNanos;
  return price;
}

/**
 * The API key a model call is made with when a runaway key's event covers it, or null: of the calls in its hours,
 * the added share 1 - 1/factor (chosen by a hash of the request id) are the runaway key's.
 */
export function runawayKeyOf(world: World, req: { id: string; endpoint: Endpoint; hour: number }): string | null {
  const s = scenarios.get(world);
  if (!s) return null;
  const t = req.hour * 3_600_000;
  for (const c of s.compiled) {
    if (c.kind !== 'runaway_key' || t < c.fromMs || t >= c.toMs || !matches(c, req.endpoint, world)) continue;
    if (unit(hashString(req.id, 0x72756e61)) < 1 - 1 / c.factor) return c.apiKeyId;
  }
  return null;
}

/** The error rate of an endpoint's requests in an hour, given its usual one. */
export function errorRateAt(world: World, ep: Endpoint, hour: number, usual: number): number {
  const s = scenarios.get(world);
  if (!s) return usual;
  const t = hour * 3_600_000;
  let rate = usual;
  for (const c of s.compiled) if (c.kind === 'errors' && t >= c.fromMs && t < c.toMs && matches(c, ep, world)) rate = c.errorRate;
  return rate;
}

/** The factor on request durations of an endpoint in an hour. */
export function latencyFactor(world: World, ep: Endpoint, hour: number): number {
  const s = scenarios.get(world);
  if (!s) return 1;
  const t = hour * 3_600_000;
  let f = 1;
  for (const c of s.compiled) if (c.kind === 'latency' && t >= c.fromMs && t < c.toMs && matches(c, ep, world)) f *= c.factor;
  return f;
}

/** What the truth endpoint lists: the scenario's name and its events as given. */
export function scenarioTruth(world: World): { name: string | null; events: ScenarioEventInput[] } {
  const s = scenarios.get(world);
  return { name: s?.name ?? null, events: s ? s.events.map((e) => ({ ...e })) : [] };
}
