/**
 * The floors of the house (ARCHITECTURE.md, "Layers"), top to bottom: a module imports only from its own floor or
 * the floors below it. `src/sim/` stands apart: only the composition root, the CLI and tests import it.
 */
export const FLOORS: ReadonlyArray<{ floor: string; match: RegExp }> = [
  { floor: 'entry', match: /^src\/main\.ts$/ },
  { floor: 'cli', match: /^src\/cli\// },
  { floor: 'service', match: /^src\/service\.ts$/ },
  { floor: 'routes, ingest, jobs', match: /^(src\/(http|api|console|mcp|ingest|jobs)\/|jobs\/|dashboards\/)/ },
  { floor: 'collectors', match: /^src\/collectors\// },
  { floor: 'insights', match: /^src\/insights\// },
  { floor: 'store, platform', match: /^src\/(store|platform)\/|^src\/runtime\.ts$/ },
  { floor: 'leaves', match: /^src\/(config|log|metrics|redact|values|progress|suggest|stdio|json-nesting|ip-ranges|retry|iso-time|cache)\.ts$|^src\/promtext\// },
];

/** The floor index of a file (0 = top), or undefined for the simulator and anything not in the house. */
export function floorOf(file: string): number | undefined {
  const i = FLOORS.findIndex((f) => f.match.test(file));
  return i < 0 ? undefined : i;
}

const SIM = /^src\/sim\//;
const MAY_IMPORT_SIM = /^(src\/main\.ts|src\/cli\/|src\/service\.ts|src\/sim\/)/;

/** Every import that runs back up a floor, or into the simulator from outside the root and the CLI. */
export function importsRunningUp(graph: Map<string, string[]>): string[] {
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    const from = floorOf(file);
    for (const t of targets) {
      if (SIM.test(t)) {
        if (!MAY_IMPORT_SIM.test(file)) bad.push(`${file} -> ${t} (the simulator)`);
        continue;
      }
      if (SIM.test(file)) {
        const to = floorOf(t);
        if (to === undefined || FLOORS[to].floor !== 'leaves') bad.push(`${file} -> ${t} (the simulator imports leaves only)`);
        continue;
      }
      const to = floorOf(t);
      if (from === undefined || to === undefined) bad.push(`${file} -> ${t} (not on any floor)`);
      else if (to < from) bad.push(`${file} -> ${t} (${FLOORS[from].floor} -> ${FLOORS[to].floor})`);
    }
  }
  return bad.sort();
}
