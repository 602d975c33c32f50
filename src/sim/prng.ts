// Deterministic randomness. Every value of the simulated world is a pure function of the seed and the
// coordinates of the thing being generated (endpoint, hour, index ...), so nothing needs to be stored and
// two runs with the same seed produce the same bytes.

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Combines a running hash with one more integer coordinate. */
export function mix(h: number, x: number): number {
  return fmix32((h ^ (fmix32(x | 0) + 0x9e3779b9 + (h << 6) + (h >>> 2))) >>> 0);
}

export function hash2(a: number, b: number): number {
  return mix(mix(0x2545f491, a), b);
}
export function hash3(a: number, b: number, c: number): number {
  return mix(mix(mix(0x2545f491, a), b), c);
}
export function hash4(a: number, b: number, c: number, d: number): number {
  return mix(mix(mix(mix(0x2545f491, a), b), c), d);
}
export function hash5(a: number, b: number, c: number, d: number, e: number): number {
  return mix(mix(mix(mix(mix(0x2545f491, a), b), c), d), e);
}

/** FNV-1a over a string, for keys that are text (fault keys, tags). */
export function hashString(s: string, h = 0x811c9dc5): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h >>> 0);
}

/** A uniform number in [0, 1) from a 32-bit hash. */
export function unit(h: number): number {
  return (h >>> 0) / 4294967296;
}

/** A mulberry32 stream as a function, for generators outside the simulator (benchmarks, property tests). */
export function mulberry32(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

/** mulberry32: small, fast and good enough for a simulator. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  u32(): number {
    return Math.floor(this.next() * 4294967296) >>> 0;
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** Integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  normal(): number {
    // Box-Muller; 1 - next() keeps log() away from zero.
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  poisson(mean: number): number {
    if (mean <= 0) return 0;
    if (mean < 30) {
      const limit = Math.exp(-mean);
      let k = 0;
      let p = this.next();
      while (p > limit) {
        k++;
        p *= this.next();
      }
      return k;
    }
    return Math.max(0, Math.round(mean + Math.sqrt(mean) * this.normal()));
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
}

const HEX = '0123456789abcdef';
/** Lower-case hex of a non-negative integer, zero-padded (or cut) to exactly `width` digits. */
export function hex(n: number, width: number): string {
  const s = n.toString(16);
  return s.length >= width ? s.slice(s.length - width) : '0'.repeat(width - s.length) + s;
}

/** A UUID-shaped id made from four 32-bit hashes (version nibble 4, variant 8-b). */
export function uuidFrom(a: number, b: number, c: number, d: number): string {
  return (
    hex(a, 8) + '-' + hex(b >>> 16, 4) + '-4' + hex(b & 0xfff, 3) + '-' + HEX[8 + (c >>> 30)] +
    hex((c >>> 16) & 0xfff, 3) + '-' + hex(c & 0xffff, 4) + hex(d, 8)
  );
}
