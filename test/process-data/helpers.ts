/** Shared by the process-data suites: a service with an injected clock, and a raw dump of its storage. */
import { randomBytes } from "node:crypto";
import { allPartitions, scanAll, type Entry, type KvStore, type Partition } from "../../src/kv/contract.js";
import { KEYSPACES } from "../../src/process-data/keys.js";
import { layout } from "../../src/process-data/layout.js";
import { openProcessData, type ProcessData, type ProcessDataOptions } from "../../src/process-data/service.js";

export interface Clock {
  now: number;
  read: () => number;
}

export function fixedClock(start = Date.UTC(2025, 0, 1)): Clock {
  const c: Clock = { now: start, read: () => c.now };
  return c;
}

export async function service(kv: KvStore, clock: Clock = fixedClock(), options: ProcessDataOptions = {}): Promise<ProcessData> {
  return openProcessData(kv, { encryptionKey: randomBytes(32), clock: clock.read, ...options });
}

/** Every kind of partition process data writes. */
export const KINDS = [layout.instanceKind, layout.expiryKind, ...KEYSPACES.map(layout.bucketKind)];

/** Every stored entry of every process-data partition, read through the contract. */
export async function rawDump(kv: KvStore): Promise<{ partition: Partition; entry: Entry }[]> {
  const out: { partition: Partition; entry: Entry }[] = [];
  for (const kind of KINDS) {
    for await (const partition of allPartitions(kv, kind)) {
      for await (const entry of scanAll(kv, partition)) out.push({ partition, entry });
    }
  }
  return out;
}

/** Collects every page of a listing. */
export async function collect<T>(page: (cursor: string | null) => Promise<{ items: T[]; nextCursor: string | null }>): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p: { items: T[]; nextCursor: string | null } = await page(cursor);
    items.push(...p.items);
    cursor = p.nextCursor;
    pages++;
    if (pages > 100_000) throw new Error("listing does not end");
  } while (cursor !== null);
  return { items, pages };
}

/** A Form.io form as the platform's modelling tools produce it (a valid form-schema body named `name`). */
export function formioForm(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    title: "Add a lab",
    name,
    path: name.toLowerCase(),
    display: "form",
    type: "form",
    components: [
      { type: "textfield", key: "labName", label: "Name" },
      { type: "columns", key: "cols", columns: [{ components: [{ type: "day", key: "opened" }] }] },
      { type: "button", key: "submit", label: "Submit" },
    ],
    ...extra,
  };
}
