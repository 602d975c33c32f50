// Issue 13, acceptance 1: the drain keeps its promise through SIGKILLs at any point. A child service (the drain
// alone, bundled so a start is cheap) receives signed batches and dies at a chosen kill point (spill, append,
// group commit, after the commit, after a replay insert, inside cleanup) or, when the point is not reached in
// time, by a SIGKILL from here; the store (the test ClickHouse endpoint in this process, which outlives every
// kill) is up, slow or down by turns, so several restarts in a row find the spool unreplayed. The sender acts
// as the platform: a body without a 200 is delivered again until it gets one.
// Checked at the end: every body answered 200 (new or duplicate) is in the store exactly once, nothing else
// is, and the last run drains the spool to zero.
// The scenario is in crash-scenario.ts. This file runs 100 kill points with seed 13, crash-seed-14.test.ts another
// 100 with seed 14 (two hundred in all, as one sequence did before; two files run side by side).
// Longer runs: TALLYHOUSE_CRASH_KILLS=2000 TALLYHOUSE_CRASH_SEED=7 npx vitest run test/ingest/drain/crash.test.ts
import { crashScenario } from './crash-scenario.js';

crashScenario({ kills: Number(process.env.TALLYHOUSE_CRASH_KILLS ?? 100), seed: Number(process.env.TALLYHOUSE_CRASH_SEED ?? 13) });
