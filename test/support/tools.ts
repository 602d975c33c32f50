// Tests that need an external tool (promtool, prometheus: Debian's `prometheus` package) run where it is on PATH
// and are reported as skipped where it is not, so `npm test` runs everything else on any machine. Where the tools
// are mandatory (TALLYHOUSE_TEST_REQUIRE_TOOLS=1, set by .ci/run) nothing is skipped: a missing tool fails its tests.
import { describe, it } from 'vitest';
import { onPath, toolsRequired } from '../../scripts/ensure-prometheus.mjs';

/** The tools of `tools` missing from PATH. */
export function missingTools(tools: readonly string[]): string[] {
  return tools.filter((t) => !onPath(t));
}

/** True when tests needing `tools` are to be skipped: some missing, and not mandatory here. */
export function skipWithout(tools: readonly string[], env: Record<string, string | undefined> = process.env): boolean {
  return !toolsRequired(env) && missingTools(tools).length > 0;
}

/** `it` for a test that needs `tools`: skipped (its name saying what to install) where they are missing. */
export function itNeeds(tools: readonly string[]) {
  return skipWithout(tools) ? it.skip : it;
}

/** `describe` for a block that needs `tools`. */
export function describeNeeds(tools: readonly string[]) {
  return skipWithout(tools) ? describe.skip : describe;
}

