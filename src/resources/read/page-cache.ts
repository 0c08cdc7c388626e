/**
 * A bounded cache of rendered list pages, keyed by the partition's chain-head version. Every write to a
 * partition appends an event and so moves its head: a page cached under an older version is never served
 * again, whichever process wrote. Entries are evicted oldest first past a count or a byte budget.
 */
export class PageCache {
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(
    private readonly maxEntries = 256,
    private readonly maxBytes = 64 * 1024 * 1024,
  ) {}

  get(key: string): Buffer | undefined {
    const hit = this.#entries.get(key);
    if (hit) {
      // Refresh its place: the map's order is the eviction order.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, page: Buffer): void {
    if (page.length > this.maxBytes / 4) return;
    const old = this.#entries.get(key);
    if (old) {
      this.#bytes -= old.length;
      this.#entries.delete(key);
    }
    this.#entries.set(key, page);
    this.#bytes += page.length;
    for (const [k, v] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(k);
      this.#bytes -= v.length;
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}
