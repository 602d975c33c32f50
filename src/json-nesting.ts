// Deeply nested JSON on the push endpoints. JSON.parse is iterative in V8 and parses any depth, but
// JSON.stringify, structuredClone and every recursive walk of the parsed value overflow the stack ("Maximum call
// stack size exceeded") a few thousand levels down: one such item answered 500 and lost its neighbours. Nothing
// here recurses, so a value of any depth can be measured, refused with its reason, or quoted in part.

/** Nesting past this is refused, item by item (the drain's `too_deep`, the same bound everywhere). */
export const MAX_NESTING_DEPTH = 1000;

/** The deepest nesting of objects and arrays in a JSON text (strings skipped): one pass, nothing parsed. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** The nesting depth of a parsed JSON value (an object or array 1, a scalar 0), walked with a stack of its own. */
export function valueDepth(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const d = depth + 1;
    if (d > max) max = d;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, d]);
    }
  }
  return max;
}

class Literal {
  constructor(readonly text: string) {}
}

/**
 * JSON.stringify of a parsed JSON value, cut to at most `maxChars` characters (then no longer valid JSON), built
 * with a stack of its own: any depth, and no more work than the characters it returns (plus the widest object
 * on the way).
 */
export function boundedJson(value: unknown, maxChars: number): string {
  let out = '';
  const stack: unknown[] = [value];
  while (stack.length > 0 && out.length < maxChars) {
    const v = stack.pop();
    if (v instanceof Literal) {
      out += v.text;
    } else if (v === null || typeof v !== 'object') {
      out += JSON.stringify(v) ?? 'null';
    } else if (Array.isArray(v)) {
      stack.push(new Literal(']'));
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push(v[i] === undefined || typeof v[i] === 'function' ? null : v[i]);
        if (i > 0) stack.push(new Literal(','));
      }
      stack.push(new Literal('['));
    } else {
      const entries = Object.entries(v).filter(([, x]) => x !== undefined && typeof x !== 'function');
      stack.push(new Literal('}'));
      for (let i = entries.length - 1; i >= 0; i--) {
        stack.push(entries[i][1]);
        stack.push(new Literal(`${i > 0 ? ',' : ''}${JSON.stringify(entries[i][0])}:`));
      }
      stack.push(new Literal('{'));
    }
  }
  return out.length > maxChars ? out.slice(0, maxChars) : out;
}
