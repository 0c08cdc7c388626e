/**
 * What a durable commit costs by the number of B-tree leaves it writes (not a benchmark row): raw lmdb-js
 * on one fresh LMDB directory of 40,000 values of 500 bytes in 10 key regions (the size of the workflow
 * row's tree), durable commits (one transaction, then `flushed`: the raw peer's `durably`) writing k values
 * either each in a different region (k leaves, as a flowstore update writes its state record, log entry,
 * history entry, head, commit sequences, ledger entry and feed entry in different places of the tree) or
 * k adjacent keys of one region (one leaf, or two: 6 values of 500 bytes fill most of a 4 KiB page). The sides alternate round by round; medians of the rounds.
 * Under `strace -f -c -e trace=fdatasync,pwrite64` the page writes per commit can be counted: a flowstore
 * update writes about 10.5 pages per commit, the workflow row's raw peer write (record + history entry)
 * about 5.3 (bench/profile/update.ts, 500 writes).
 *   npx tsx bench/profile/pages.ts [commits per round] [rounds]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { durably, openDb, pad } from "../peers/lmdb-streams.js";

const n = Number(process.argv[2] ?? 300);
const rounds = Number(process.argv[3] ?? 5);
const REGIONS = 10;
const PER_REGION = 4000;
const dir = mkdtempSync(join(tmpdir(), "fs-pages-"));
const db = openDb(dir);
const value = Buffer.alloc(500, 7);
await durably(db, () => {
  for (let r = 0; r < REGIONS; r++) for (let i = 0; i < PER_REGION; i++) db.putSync(`r${r}/${pad(i)}`, value);
});

let at = 0;
/** One durable commit of k values: in k regions (scattered) or k neighbours in one region (adjacent). */
const commit = (k: number, scattered: boolean): Promise<void> => {
  const base = (at = (at + 7919) % (PER_REGION - k));
  return durably(db, () => {
    for (let j = 0; j < k; j++) db.putSync(scattered ? `r${j % REGIONS}/${pad((base + j * 613) % PER_REGION)}` : `r0/${pad(base + j)}`, value);
  });
};
const sides: { name: string; k: number; scattered: boolean }[] = [
  { name: "1 value", k: 1, scattered: false },
  { name: "2 values, 2 leaves", k: 2, scattered: true },
  { name: "5 values, 5 leaves", k: 5, scattered: true },
  { name: "10 values, 10 leaves", k: 10, scattered: true },
  { name: "6 values, 1 leaf", k: 6, scattered: false },
];
const seen = new Map<string, number[]>();
for (let r = -1; r < rounds; r++) {
  // round -1 warms up and is not counted; each round starts at another side
  for (const s of [...sides.slice((r + 1) % sides.length), ...sides.slice(0, (r + 1) % sides.length)]) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await commit(s.k, s.scattered);
    const rate = n / ((performance.now() - t0) / 1000);
    if (r >= 0) seen.set(s.name, [...(seen.get(s.name) ?? []), rate]);
  }
}
const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
const one = median(seen.get("1 value")!);
for (const s of sides) {
  const m = median(seen.get(s.name)!);
  process.stdout.write(`${s.name.padEnd(22)} ${m.toFixed(0).padStart(6)} commits/s  ${(one / m).toFixed(2)}× the time of one value\n`);
}
await db.close();
rmSync(dir, { recursive: true, force: true });
