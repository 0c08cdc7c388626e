/**
 * What the raw-LMDB peers share: an lmdb-js environment with string keys and binary values, and a durable
 * write (the transaction's promise, then `flushed`: the same durability flowstore's commits give).
 */
import { open, type RootDatabase } from "lmdb";

export type Db = RootDatabase<Buffer, string>;

export function openDb(dir: string): Db {
  return open<Buffer, string>({ path: dir, encoding: "binary" });
}

/** Runs `write` in one write transaction and resolves once it is on disk. */
export async function durably(db: Db, write: () => void): Promise<void> {
  const done = db.transaction(write);
  const flushed = new Promise<void>((resolve, reject) => db.flushed.then(() => resolve(), reject));
  await done;
  await flushed;
}

/** Removes every key starting with `prefix` (inside a write transaction). */
export function removePrefix(db: Db, prefix: string): number {
  let n = 0;
  for (const k of db.getKeys({ start: prefix, end: prefix + "\uffff" })) {
    db.removeSync(k);
    n++;
  }
  return n;
}

export const pad = (n: number): string => String(n).padStart(9, "0");
