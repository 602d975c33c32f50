/**
 * "Did you mean": the closest of the names a command accepts to what was typed, as git, gh and kubectl suggest
 * one. Close means an edit distance of at most a third of the name (at least 1, at most 3: `reprot` -> `report`),
 * or the typed text is the start of exactly one name (`fin` -> `finance`), both case-insensitive.
 */
export function closest(typed: string, candidates: readonly string[]): string | undefined {
  const t = typed.toLowerCase();
  if (!t) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(t, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  if (best !== undefined && bestDistance <= Math.min(3, Math.max(1, Math.floor(best.length / 3)))) return best;
  const prefixed = candidates.filter((c) => c.toLowerCase().startsWith(t));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** ` (did you mean "x"?)` or nothing. */
export function didYouMean(typed: string, candidates: readonly string[], quote = (s: string) => JSON.stringify(s)): string {
  const c = closest(typed, candidates);
  return c === undefined ? '' : `; did you mean ${quote(c)}?`;
}

/** Damerau-Levenshtein (optimal string alignment): a swap of two neighbours (`reprot`) counts as one edit. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * A parseArgs error as one line for a person: an unknown option gets "did you mean" among `options`, and parseArgs'
 * advice on passing a positional that starts with '-' is left out (no command here takes one).
 */
export function describeArgsError(err: unknown, options: readonly string[]): string {
  const message = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
  const unknown = /^Unknown option '(--?[^']+)'/.exec(message);
  if (unknown) {
    const name = unknown[1].replace(/^-+/, '').replace(/=.*$/, '');
    return `unknown option ${unknown[1]}${didYouMean(name, options, (s) => `--${s}`)}`;
  }
  const positional = /^Unexpected argument '([^']+)'/.exec(message);
  if (positional) return `unexpected argument ${JSON.stringify(positional[1])}`;
  return message;
}

/** Whether the arguments ask for help (`--help` or `-h` anywhere). */
export function wantsHelp(argv: readonly string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}
