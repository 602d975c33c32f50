// `npm run bench -- anomalies [--worlds noise-10,weekly,...] [--seeds 1,2]`
//
// Issue 46.6: the detector (src/insights/anomalies.ts, as the anomalies job calls it) on nine generated worlds
// (bench/lib/anomaly-worlds.ts), two seeds each, each with 12 planted episodes. Per world and seed: precision and
// recall of episodes (consecutive flagged buckets of a series form one), false episodes per 1,000 series-days, the
// median detection delay (hours from the planted start to the end of the first flagged bucket: 24 for a daily
// series found on its first day, 1 for an hourly one found in its first hour) and the detection's run time.
// The table goes to stderr, one JSON line of every figure to stdout. Goal (issue 46, acceptance): on every world
// and seed, recall >= 11/12 and <= 1 false episode per 1,000 series-days; hourly series found within an hour.
import { parseArgs } from 'node:util';
import { detectAll } from '../src/insights/anomalies.js';
import { buildWorld, scoreEpisodes, WORLD_MODELS, WORLD_NAMES } from './lib/anomaly-worlds.js';

const { values } = parseArgs({
  options: {
    worlds: { type: 'string', default: WORLD_NAMES.join(',') },
    seeds: { type: 'string', default: '1,2' },
  },
});
const worlds = values.worlds.split(',').filter(Boolean);
for (const w of worlds) if (!WORLD_NAMES.includes(w)) throw new Error(`--worlds: unknown world ${w}; worlds: ${WORLD_NAMES.join(', ')}`);
const seeds = values.seeds.split(',').map(Number);

const results = [];
for (const name of worlds) {
  for (const seed of seeds) {
    const world = buildWorld(name, seed);
    const started = performance.now();
    const flagged = detectAll(world.series, world.fromMs, world.toMs);
    const detectMs = performance.now() - started;
    const s = scoreEpisodes(world, flagged);
    results.push({
      world: name,
      seed,
      grain: WORLD_MODELS.find((m) => m.name === name)!.grain,
      recall: `${s.found}/${s.planted}`,
      precision: Number(s.precision.toFixed(3)),
      episodes: s.episodes,
      false_episodes: s.falseEpisodes,
      series_days: s.seriesDays,
      false_per_1000_series_days: Number(s.falsePerThousandSeriesDays.toFixed(2)),
      median_delay_hours: s.medianDelayHours,
      detect_ms: Math.round(detectMs),
      missed: s.missed,
      goal_met: s.found >= 11 && s.falsePerThousandSeriesDays <= 1 && (name !== 'cheap-runaway' || (s.medianDelayHours ?? Infinity) <= 1),
    });
  }
}

const header = ['world', 'seed', 'recall', 'precision', 'false/1k series-days', 'median delay h', 'ms', 'goal'];
const rows = results.map((r) => [r.world, String(r.seed), r.recall, r.precision.toFixed(2), r.false_per_1000_series_days.toFixed(2), String(r.median_delay_hours ?? '-'), String(r.detect_ms), r.goal_met ? 'met' : 'NOT met']);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
process.stderr.write([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n') + '\n');
for (const r of results) if (r.missed.length) process.stderr.write(`${r.world} seed ${r.seed} missed: ${r.missed.join('; ')}\n`);
console.log(
  JSON.stringify({
    bench: 'anomalies',
    worlds: results.length,
    goal_met_worlds: results.filter((r) => r.goal_met).length,
    goal_met: results.every((r) => r.goal_met),
    results,
  }),
);
