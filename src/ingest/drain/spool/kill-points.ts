// Test-only: the crash test (test/ingest/drain/crash.test.ts) sets TALLYHOUSE_TEST_KILL_AT=<point>:<n> to have
// the process SIGKILL itself the n-th time it passes <point>, so kills land where a crash hurts most (inside a
// group commit, between an insert and its commit, ...) rather than wherever a timer happens to fire.
// Unset (always, outside that test), passKillPoint does nothing.
const target = /^([a-z-]+):(\d+)$/.exec(process.env.TALLYHOUSE_TEST_KILL_AT ?? '');
let passes = 0;

export type KillPoint = 'spill' | 'append' | 'group-commit' | 'after-commit' | 'replay-insert' | 'cleanup';

export function passKillPoint(point: KillPoint): void {
  if (!target || target[1] !== point) return;
  if (++passes === Number(target[2])) process.kill(process.pid, 'SIGKILL');
}
