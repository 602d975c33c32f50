// Building each sample's label object with keyed stores (`o[name] = v`) costs ~25 ns a label once
// the store sites have seen many names, plus a second allocation past four properties; an object
// literal `{ "a": v[0], "b": v[1] }` is one allocation at about a third of the cost. So for each
// sequence of label names we generate, once, a function returning that literal. Names enter the
// generated source only through JSON.stringify, which always yields a plain string literal, so no
// label name can inject code. Where code generation is disabled
// (--disallow-code-generation-from-strings) we fall back to keyed stores.

export type LabelFactory = (values: readonly string[]) => Record<string, string>;

/** Shared by all parses: a scraper sees the same label-name sequences on every scrape. */
const factories = new Map<string, LabelFactory>();
const MAX_FACTORIES = 4096;
let codegenAvailable = true;

/**
 * The factory for the first `count` names: a cached one, else a generated one when `mayCompile`,
 * else plain keyed stores. A parse limits how many it generates (tens of microseconds each), so
 * that a target with a new label name on every line does not cost a compilation per line.
 */
export function labelFactory(names: readonly string[], count: number, mayCompile: boolean): { make: LabelFactory; compiled: boolean } {
  const fixed = names.slice(0, count);
  const key = JSON.stringify(fixed);
  const cached = factories.get(key);
  if (cached !== undefined) return { make: cached, compiled: false };
  if (!mayCompile) return { make: keyedFactory(fixed), compiled: false };
  const make = compileFactory(fixed);
  if (factories.size >= MAX_FACTORIES) factories.clear();
  factories.set(key, make);
  return { make, compiled: true };
}

function compileFactory(names: readonly string[]): LabelFactory {
  if (codegenAvailable) {
    // A computed key defines an own property even for __proto__, where a plain one sets the prototype.
    const props = names.map((name, k) => `${name === '__proto__' ? '["__proto__"]' : JSON.stringify(name)}: v[${k}]`);
    try {
      return new Function('v', `"use strict"; return { ${props.join(', ')} };`) as LabelFactory;
    } catch {
      codegenAvailable = false;
    }
  }
  return keyedFactory(names);
}

function keyedFactory(names: readonly string[]): LabelFactory {
  return (values) => {
    const labels: Record<string, string> = {};
    for (let k = 0; k < names.length; k++) setLabel(labels, names[k] as string, values[k] as string);
    return labels;
  };
}

export function setLabel(labels: Record<string, string>, name: string, value: string): void {
  // A label may legitimately be called __proto__; plain assignment would set the prototype instead.
  if (name === '__proto__') {
    Object.defineProperty(labels, name, { value, enumerable: true, writable: true, configurable: true });
  } else {
    labels[name] = value;
  }
}
