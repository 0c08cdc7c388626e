/** Every entry of a store, every kind's partitions, as `partition keyhex=valuehex` lines: a byte-for-byte comparison of two stores. */
import { ALL_KINDS } from "../../src/compose/index.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";

export async function dumpAll(kv: KvStore, kinds: readonly string[] = ALL_KINDS): Promise<string[]> {
  const out: string[] = [];
  for (const kind of kinds) {
    for await (const p of allPartitions(kv, kind)) for await (const e of scanAll(kv, p)) out.push(`${JSON.stringify(p)} ${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
  }
  return out;
}
