/** A store's export (compose/transfer.ts) written to a file: answers the file's path. */
import { createWriteStream } from "node:fs";
import { finished } from "node:stream/promises";
import { exportStore } from "../../src/compose/transfer.js";
import type { KvStore } from "../../src/kv/contract.js";

export async function exportTo(kv: KvStore, file: string): Promise<string> {
  const out = createWriteStream(file);
  await exportStore(kv, out);
  out.end();
  await finished(out);
  return file;
}
