/**
 * Export and import of a whole store as NDJSON, streamed: every partition of every kind with its raw
 * entries (state, indexes and the hash-chained log alike), so an import into an empty store of any
 * backend reproduces the source byte for byte and its chains verify.
 *
 *   {"flowstore":"export","version":1,"backend":"lmdb","at":"…"}
 *   {"partition":"<base64 of the encoded partition tuple>"}
 *   {"k":"<base64 key bytes>","v":"<base64 value>"}   … one line per entry of that partition
 *   {"end":{"partitions":n,"entries":m}}
 *
 * Process-data access tokens stay sealed (encrypted) in an export; they are never decrypted here.
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { once } from "node:events";
import { ValidationError } from "../errors.js";
import { allPartitions, scanAll, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { decode, encode } from "../kv/tuple.js";
import { ARCHIVE_KINDS } from "../archive/kinds.js";
import { IDENTITY_KINDS } from "../identity/kinds.js";
import { PROCESS_DATA_KINDS } from "../process-data/kinds.js";
import { RESOURCE_KINDS } from "../resources/kinds.js";
import { tenancySchema } from "../tenancy/schema.js";
import { workflowSchema } from "../workflow/schema.js";

/** Every partition kind flowstore writes. A test checks that no layer writes a kind missing here. */
export const ALL_KINDS: readonly string[] = [
  ...new Set([
    ...RESOURCE_KINDS,
    ...ownerKinds(workflowSchema.types),
    ...ownerKinds(tenancySchema.types),
    ...IDENTITY_KINDS,
    ...ARCHIVE_KINDS,
    ...PROCESS_DATA_KINDS,
  ]),
];

function ownerKinds(types: ReadonlyMap<string, { owner: string }>): string[] {
  return [...new Set([...types.values()].map((t) => t.owner))];
}

export interface Progress {
  (done: { partitions: number; entries: number }): void;
}

export interface TransferCounts {
  partitions: number;
  entries: number;
}

const BATCH_ENTRIES = 500;
const BATCH_BYTES = 4 * 1024 * 1024;

async function write(out: Writable, line: string): Promise<void> {
  if (!out.write(line + "\n")) await once(out, "drain");
}

export async function exportStore(kv: KvStore, out: Writable, onProgress?: Progress): Promise<TransferCounts> {
  const counts = { partitions: 0, entries: 0 };
  await write(out, JSON.stringify({ flowstore: "export", version: 1, backend: kv.backend, at: new Date().toISOString() }));
  for (const kind of ALL_KINDS) {
    for await (const partition of allPartitions(kv, kind)) {
      // A partition whose keys were all deleted stays listed; it has nothing to carry over.
      let started = false;
      for await (const e of scanAll(kv, partition, { limit: 1000 })) {
        if (!started) await write(out, JSON.stringify({ partition: encode(partition).toString("base64") }));
        started = true;
        await write(out, `{"k":"${e.keyBytes.toString("base64")}","v":"${e.value.toString("base64")}"}`);
        counts.entries++;
      }
      if (!started) continue;
      counts.partitions++;
      onProgress?.(counts);
    }
  }
  await write(out, JSON.stringify({ end: counts }));
  return counts;
}

/** True when the store holds no partition of any kind flowstore writes. */
export async function isEmpty(kv: KvStore): Promise<boolean> {
  for (const kind of ALL_KINDS) if ((await kv.listPartitions(kind, { limit: 1 })).partitions.length > 0) return false;
  return true;
}

export async function importStore(kv: KvStore, input: Readable, onProgress?: Progress): Promise<TransferCounts> {
  if (!(await isEmpty(kv))) throw new ValidationError("the target store is not empty: import only into an empty store", "store");
  const counts = { partitions: 0, entries: 0 };
  let partition: Partition | null = null;
  let batch: Op[] = [];
  let bytes = 0;
  let header = false;
  let ended: TransferCounts | null = null;
  let lineNo = 0;
  const flush = async (): Promise<void> => {
    if (partition && batch.length > 0) await kv.commit(partition, batch);
    batch = [];
    bytes = 0;
  };
  const bad = (why: string): never => {
    throw new ValidationError(`line ${lineNo} of the export: ${why}`, "input");
  };
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    lineNo++;
    if (line.trim() === "") continue;
    if (ended) bad("data after the end line");
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return bad("not JSON");
    }
    if (!header) {
      if (obj.flowstore !== "export" || obj.version !== 1) bad("not a flowstore export (version 1)");
      header = true;
      continue;
    }
    if (typeof obj.partition === "string") {
      await flush();
      if (partition) {
        counts.partitions++;
        onProgress?.(counts);
      }
      partition = decode(Buffer.from(obj.partition, "base64"));
    } else if (typeof obj.k === "string" && typeof obj.v === "string") {
      if (!partition) bad("an entry before any partition");
      const value = Buffer.from(obj.v, "base64");
      batch.push({ type: "put", key: decode(Buffer.from(obj.k, "base64")), value });
      counts.entries++;
      bytes += value.length;
      if (batch.length >= BATCH_ENTRIES || bytes >= BATCH_BYTES) await flush();
    } else if (obj.end && typeof obj.end === "object") {
      await flush();
      if (partition) counts.partitions++;
      ended = obj.end as TransferCounts;
    } else {
      bad("an unknown line");
    }
  }
  if (!header) bad("empty input");
  if (!ended) throw new ValidationError("the export ends before its end line: it was cut off", "input");
  if (ended.partitions !== counts.partitions || ended.entries !== counts.entries) {
    throw new ValidationError(`the export says ${ended.partitions} partitions / ${ended.entries} entries, it held ${counts.partitions} / ${counts.entries}`, "input");
  }
  onProgress?.(counts);
  return counts;
}

/** A progress reporter: a rewritten line on a terminal, a plain line every `every` partitions otherwise. */
export function progressReporter(stream: NodeJS.WriteStream, verb: string, every = 100): { update: Progress; done: (c: TransferCounts) => void } {
  let last = 0;
  return {
    update: (c) => {
      if (stream.isTTY) stream.write(`\r${verb} ${c.partitions} partitions, ${c.entries} entries`);
      else if (c.partitions - last >= every) {
        last = c.partitions;
        stream.write(`${verb} ${c.partitions} partitions, ${c.entries} entries\n`);
      }
    },
    done: (c) => stream.write(`${stream.isTTY ? "\r" : ""}${verb} ${c.partitions} partitions, ${c.entries} entries: done\n`),
  };
}
