// Bodies already spooled, by id, for a bounded time and count: a redelivery within the window is answered as a
// duplicate and not stored twice. Insertion order is age order, so eviction walks from the front.
export class SeenIndex {
  private readonly entries = new Map<string, number>();
  constructor(private readonly windowMs: number, private readonly maxEntries: number) {}

  has(id: string, nowMs = Date.now()): boolean {
    const at = this.entries.get(id.slice(0, 32));
    return at !== undefined && nowMs - at <= this.windowMs;
  }

  add(id: string, atMs: number): void {
    const key = id.slice(0, 32);
    this.entries.delete(key);
    this.entries.set(key, atMs);
    this.evict(Date.now());
  }

  get size(): number {
    return this.entries.size;
  }

  entriesSince(): Iterable<[string, number]> {
    return this.entries.entries();
  }

  private evict(nowMs: number): void {
    for (const [key, at] of this.entries) {
      if (this.entries.size <= this.maxEntries && nowMs - at <= this.windowMs) break;
      this.entries.delete(key);
    }
  }
}
