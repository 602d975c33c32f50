// The static part of the simulated platform: owners, machine types and prices, apps, endpoints, models and
// surge periods. Everything is derived from the seed; the time-dependent parts (runners, requests, logs) are
// generated lazily from this in runners.ts and requests.ts.
import { DAY_MS, HOUR_MS } from './time.js';
import { Rng, hash3, hash4, mix, hashString, uuidFrom, unit } from './prng.js';
import { percentToMilli } from './money.js';

export interface MachineType {
  name: string;
  /** Base price in integer nano-USD per machine-second. */
  basePriceNanos: number;
  gpuModel: string | null;
  gpuCount: number;
  cpuCores: number;
  memoryBytes: number;
  vramBytes: number;
}

export interface Owner {
  name: string;
  userId: string;
  /** Whether the simulated caller (both keys) owns this owner's apps. */
  ownedByCaller: boolean;
}

export interface Price {
  unitPriceNanos: number;
  surgePriceNanos: number;
  /** As served: null or a percentage like 12.5. */
  percentDiscount: number | null;
  /** The same in thousandths of a percent, for exact arithmetic. */
  percentDiscountMilli: number | null;
}

export interface Endpoint {
  /** Global index; encoded in request ids. */
  index: number;
  /** `owner/app` or `owner/app/route`; for models `svc-ai/<model>`. */
  id: string;
  owner: string;
  appIndex: number;
  route: string | null;
  isModel: boolean;
  /** Share of the app's traffic relative to 1 (the mean). */
  weight: number;
  medianDurationMs: number;
}

export interface App {
  index: number;
  appId: string;
  owner: string;
  name: string;
  endpointId: string;
  environment: string;
  ownedByCaller: boolean;
  machineTypes: string[];
  authMode: 'public' | 'private';
  keepAliveSeconds: number;
  minConcurrency: number;
  maxConcurrency: number;
  requestTimeoutSeconds: number;
  startupTimeoutSeconds: number;
  validRegions: string[];
  /** Requests an hour one runner absorbs before another is started. */
  capacityPerRunnerHour: number;
  trafficScale: number;
  /** Shift of the daily traffic curve, hours. */
  phaseHours: number;
  /** Probability that a given day has no traffic at all. */
  dormancy: number;
  errorRate: number;
  /** `duration`: billable_units = seconds of execution; `units`: an integer count of outputs. */
  billing: 'duration' | 'units';
  /** Requests of this app are queue submissions with a webhook (pushed to --webhook-url). */
  webhooks: boolean;
  createdAtMs: number;
  endpoints: Endpoint[];
}

export interface ModelInfo {
  endpointId: string;
  displayName: string;
  category: string;
  description: string;
  status: 'active' | 'deprecated';
  tags: string[];
  updatedAtMs: number;
}

export interface WorldOptions {
  seed: number;
  nowMs: number;
  days: number;
  apps: number;
  requestsPerHour: number;
  /** Late billing (fault injection, issue 50.3): this share of requests is billed `delayMs` later than usual. */
  lateBilling?: LateBilling;
}

export interface LateBilling {
  /** Share of requests (0-1), drawn per request from the seed. */
  rate: number;
  delayMs: number;
}

export interface World {
  seed: number;
  /** Start of history (inclusive, whole hour): nothing exists before it. */
  historyStartMs: number;
  historyStartHour: number;
  initialNowMs: number;
  requestsPerHour: number;
  /** Requests billed days late (none unless asked for). */
  lateBilling: LateBilling | null;
  /** The caller's account: its user id (webhook deliveries) and the owners its keys own. */
  userId: string;
  callerOwners: string[];
  owners: Owner[];
  machineTypes: MachineType[];
  machineTypeByName: Map<string, MachineType>;
  apps: App[];
  appByKey: Map<string, App>;
  appByName: Map<string, App>;
  appById: Map<string, App>;
  endpoints: Endpoint[];
  endpointById: Map<string, Endpoint>;
  models: ModelInfo[];
  /** Runners that ended before this time report the legacy state DEAD instead of TERMINATED. */
  legacyCutoverMs: number;
  price(owner: string, machineType: string): Price;
  /** Sorted, non-overlapping surge periods [startMs, endMs) of a machine type that overlap [fromMs, toMs). */
  surgePeriods(machineType: string, fromMs: number, toMs: number): Array<[number, number]>;
}

export const MACHINE_TYPES: MachineType[] = [
  { name: 'CPU', basePriceNanos: 20_000, gpuModel: null, gpuCount: 0, cpuCores: 4, memoryBytes: 16 * 2 ** 30, vramBytes: 0 },
  { name: 'GPU-A6000', basePriceNanos: 200_000, gpuModel: 'A6000', gpuCount: 1, cpuCores: 8, memoryBytes: 64 * 2 ** 30, vramBytes: 48 * 2 ** 30 },
  { name: 'GPU-A100', basePriceNanos: 300_000, gpuModel: 'A100', gpuCount: 1, cpuCores: 12, memoryBytes: 96 * 2 ** 30, vramBytes: 40 * 2 ** 30 },
  { name: 'GPU-H100', basePriceNanos: 575_000, gpuModel: 'H100', gpuCount: 1, cpuCores: 16, memoryBytes: 128 * 2 ** 30, vramBytes: 80 * 2 ** 30 },
  { name: 'GPU-H200', basePriceNanos: 700_000, gpuModel: 'H200', gpuCount: 1, cpuCores: 16, memoryBytes: 160 * 2 ** 30, vramBytes: 141 * 2 ** 30 },
  { name: 'GPU-B200', basePriceNanos: 1_100_000, gpuModel: 'B200', gpuCount: 1, cpuCores: 24, memoryBytes: 256 * 2 ** 30, vramBytes: 192 * 2 ** 30 },
];
/** Weights for an app's choice of machine type. */
const MACHINE_WEIGHTS = [8, 10, 14, 30, 10, 6];

/** Owner-specific rates: a negotiated base price and a percent discount (null = none). */
const OWNER_RATES: Record<string, Record<string, { base?: number; discount?: number | null }>> = {
  acme: { 'GPU-H100': { discount: 12.5 }, 'GPU-A100': { discount: 10 }, 'GPU-B200': { discount: 7.25 } },
  'acme-team': { 'GPU-H100': { base: 540_000 }, 'GPU-A6000': { discount: 15 }, CPU: { discount: 33.333 } },
};

/** Surge pricing multiplies the (owner's) base price by 3/2; base prices are even so this stays an integer. */
function surgeOf(base: number): number {
  return (base * 3) / 2;
}

const APP_STEMS = [
  'flux', 'sdxl', 'whisper', 'llama', 'kokoro', 'wan', 'hunyuan', 'ltx', 'mochi', 'musicgen', 'depth', 'sam',
  'clip', 'bge', 'qwen', 'mistral', 'yolo', 'esrgan', 'rembg', 'controlnet', 'ip-adapter', 'tts', 'sd3', 'pixart',
];
const APP_SUFFIXES = [
  'lora', 'turbo', 'api', 'worker', 'trainer', 'inpaint', 'upscaler', 'batch', 'realtime', 'edge', 'pro', 'lite',
  'v2', 'v3', 'preview', 'xl',
];
const ROUTES = ['generate', 'image-to-image', 'text-to-image', 'transcribe', 'embed', 'stream', 'status', 'upscale', 'caption'];
const REGIONS = ['us-east', 'us-west', 'eu-central', 'ap-south'];

const MODEL_LIST: Array<[string, string, string]> = [
  ['flux-dev', 'FLUX.1 [dev]', 'text-to-image'],
  ['flux-pro', 'FLUX.1 [pro]', 'text-to-image'],
  ['fast-sdxl', 'Fast SDXL', 'text-to-image'],
  ['whisper', 'Whisper', 'speech-to-text'],
  ['kling-video', 'Kling Video', 'image-to-video'],
  ['recraft-v3', 'Recraft V3', 'text-to-image'],
  ['stable-audio', 'Stable Audio', 'text-to-audio'],
  ['llava-next', 'LLaVA-NeXT', 'vision'],
  ['birefnet', 'BiRefNet', 'image-to-image'],
  ['f5-tts', 'F5 TTS', 'text-to-speech'],
  ['clarity-upscaler', 'Clarity Upscaler', 'image-to-image'],
  ['minimax-video', 'MiniMax Video', 'text-to-video'],
];
export const MODEL_OWNER = 'svc-ai';

export function buildWorld(opts: WorldOptions): World {
  const seed = opts.seed >>> 0;
  const rng = new Rng(hash3(seed, 0x77, 1));
  const historyStartHour = Math.floor((opts.nowMs - opts.days * DAY_MS) / HOUR_MS);
  const historyStartMs = historyStartHour * HOUR_MS;

  const owners: Owner[] = [
    { name: 'acme', userId: `usr_${uuidFrom(hash3(seed, 1, 1), hash3(seed, 1, 2), hash3(seed, 1, 3), hash3(seed, 1, 4)).slice(0, 13)}`, ownedByCaller: true },
    { name: 'acme-team', userId: `usr_${uuidFrom(hash3(seed, 2, 1), hash3(seed, 2, 2), hash3(seed, 2, 3), hash3(seed, 2, 4)).slice(0, 13)}`, ownedByCaller: true },
    { name: 'other-co', userId: `usr_${uuidFrom(hash3(seed, 3, 1), hash3(seed, 3, 2), hash3(seed, 3, 3), hash3(seed, 3, 4)).slice(0, 13)}`, ownedByCaller: false },
  ];

  const prices = new Map<string, Price>();
  for (const owner of owners) {
    for (const mt of MACHINE_TYPES) {
      const rate = OWNER_RATES[owner.name]?.[mt.name] ?? {};
      const base = rate.base ?? mt.basePriceNanos;
      const pct = rate.discount ?? null;
      prices.set(`${owner.name}|${mt.name}`, {
        unitPriceNanos: base,
        surgePriceNanos: surgeOf(base),
        percentDiscount: pct,
        percentDiscountMilli: pct === null ? null : percentToMilli(pct),
      });
    }
  }

  // Unique app names across all owners: usage rows carry the app name only.
  const names: string[] = [];
  for (const stem of APP_STEMS) for (const suffix of APP_SUFFIXES) names.push(`${stem}-${suffix}`);
  rng.shuffle(names);
  const ownedCount = Math.max(1, opts.apps);
  const teamCount = Math.max(1, Math.round(ownedCount * 0.15));
  const otherCount = 3;
  const totalApps = ownedCount + otherCount;
  while (names.length < totalApps) names.push(`app-${names.length}`);

  const apps: App[] = [];
  const endpoints: Endpoint[] = [];
  const weightTotal = MACHINE_WEIGHTS.reduce((a, b) => a + b, 0);
  const pickMachine = (r: Rng): string => {
    let x = r.next() * weightTotal;
    for (let i = 0; i < MACHINE_TYPES.length; i++) {
      x -= MACHINE_WEIGHTS[i];
      if (x < 0) return MACHINE_TYPES[i].name;
    }
    return MACHINE_TYPES[MACHINE_TYPES.length - 1].name;
  };

  for (let i = 0; i < totalApps; i++) {
    const r = new Rng(hash3(seed, 0xa99, i));
    const owner = i < ownedCount - teamCount ? 'acme' : i < ownedCount ? 'acme-team' : 'other-co';
    const name = names[i];
    const machineTypes = [pickMachine(r)];
    if (r.chance(0.2)) {
      const second = pickMachine(r);
      if (second !== machineTypes[0]) machineTypes.push(second);
    }
    const minConcurrency = r.chance(0.25) ? 1 : 0;
    const maxConcurrency = Math.max(minConcurrency, 1, r.pick([1, 2, 2, 3, 3, 4, 5]));
    const app: App = {
      index: i,
      appId: uuidFrom(hash3(seed, 0xa1d, i), hash3(seed, 0xa1e, i), hash3(seed, 0xa1f, i), hash3(seed, 0xa20, i)),
      owner,
      name,
      endpointId: `${owner}/${name}`,
      environment: r.chance(0.2) ? 'staging' : 'main',
      ownedByCaller: owner !== 'other-co',
      machineTypes,
      authMode: r.chance(0.7) ? 'private' : 'public',
      keepAliveSeconds: r.pick([60, 120, 300, 600]),
      minConcurrency,
      maxConcurrency,
      requestTimeoutSeconds: r.pick([60, 300, 600, 3600]),
      startupTimeoutSeconds: r.pick([300, 600, 900]),
      validRegions: REGIONS.filter((_, k) => k === 0 || r.chance(0.4)),
      capacityPerRunnerHour: r.range(15, 60),
      trafficScale: Math.exp(0.7 * r.normal() - 0.245),
      phaseHours: r.range(-6, 6),
      dormancy: r.chance(0.2) ? 0.5 : r.chance(0.1) ? 0.85 : 0,
      errorRate: 0.01 + r.next() * 0.07,
      billing: r.chance(0.7) ? 'duration' : 'units',
      webhooks: r.chance(0.15),
      createdAtMs: historyStartMs - r.range(1, 400) * DAY_MS,
      endpoints: [],
    };
    const routeCount = r.pick([0, 0, 1, 1, 2]);
    const routes = r.shuffle([...ROUTES]).slice(0, routeCount);
    const appEndpoints: Array<[string | null, number]> = [[null, 1]];
    for (const route of routes) appEndpoints.push([route, 0.3 + r.next() * 1.2]);
    for (const [route, weight] of appEndpoints) {
      const ep: Endpoint = {
        index: endpoints.length,
        id: route ? `${owner}/${name}/${route}` : `${owner}/${name}`,
        owner,
        appIndex: i,
        route,
        isModel: false,
        weight,
        medianDurationMs: Math.round(Math.exp(Math.log(300) + r.next() * Math.log(60))),
      };
      endpoints.push(ep);
      app.endpoints.push(ep);
    }
    apps.push(app);
  }

  const models: ModelInfo[] = [];
  for (let m = 0; m < MODEL_LIST.length; m++) {
    const [slug, displayName, category] = MODEL_LIST[m];
    const r = new Rng(hash3(seed, 0x30de1, m));
    const ep: Endpoint = {
      index: endpoints.length,
      id: `${MODEL_OWNER}/${slug}`,
      owner: MODEL_OWNER,
      appIndex: -1,
      route: null,
      isModel: true,
      weight: 0.1 + r.next() * 0.5,
      medianDurationMs: Math.round(Math.exp(Math.log(500) + r.next() * Math.log(40))),
    };
    endpoints.push(ep);
    models.push({
      endpointId: ep.id,
      displayName,
      category,
      description: `${displayName}: ${category} on the platform's public model endpoints`,
      status: m === MODEL_LIST.length - 1 ? 'deprecated' : 'active',
      tags: [category.split('-')[0], m % 3 === 0 ? 'popular' : 'new'],
      updatedAtMs: historyStartMs - r.range(1, 200) * DAY_MS,
    });
  }

  const surgeCache = new Map<string, Array<[number, number]>>();
  const surgeOfDay = (machineType: string, day: number): Array<[number, number]> => {
    const key = `${machineType}|${day}`;
    let periods = surgeCache.get(key);
    if (!periods) {
      periods = [];
      if (machineType !== 'CPU') {
        const h = hash4(seed, 0x5e9e, hashString(machineType), day);
        const likely = machineType === 'GPU-H100' || machineType === 'GPU-B200' ? 0.45 : 0.25;
        if (unit(h) < likely) {
          const r = new Rng(mix(h, 1));
          const minutes = r.range(60, 300);
          const startMinute = r.range(0, 1440 - minutes);
          const a = day * DAY_MS + startMinute * 60_000;
          periods.push([a, a + minutes * 60_000]);
        }
      }
      surgeCache.set(key, periods);
    }
    return periods;
  };

  const world: World = {
    seed,
    historyStartMs,
    historyStartHour,
    initialNowMs: opts.nowMs,
    requestsPerHour: opts.requestsPerHour,
    lateBilling: opts.lateBilling && opts.lateBilling.rate > 0 ? opts.lateBilling : null,
    userId: owners[0].userId,
    callerOwners: owners.filter((o) => o.ownedByCaller).map((o) => o.name),
    owners,
    machineTypes: MACHINE_TYPES,
    machineTypeByName: new Map(MACHINE_TYPES.map((m) => [m.name, m])),
    apps,
    appByKey: new Map(apps.map((a) => [a.endpointId, a])),
    appByName: new Map(apps.map((a) => [a.name, a])),
    appById: new Map(apps.map((a) => [a.appId, a])),
    endpoints,
    endpointById: new Map(endpoints.map((e) => [e.id, e])),
    models,
    legacyCutoverMs: historyStartMs + Math.min(10, Math.floor(opts.days / 3)) * DAY_MS,
    price(owner, machineType) {
      const p = prices.get(`${owner}|${machineType}`);
      if (!p) throw new Error(`no price for ${owner} ${machineType}`);
      return p;
    },
    surgePeriods(machineType, fromMs, toMs) {
      const out: Array<[number, number]> = [];
      for (let day = Math.floor(fromMs / DAY_MS); day * DAY_MS < toMs; day++) {
        for (const p of surgeOfDay(machineType, day)) if (p[1] > fromMs && p[0] < toMs) out.push(p);
      }
      return out;
    },
  };
  return world;
}
