/**
 * `flowstore verify` covers who could do what (issue 29; kv/record-chain.ts): the real process over an
 * LMDB directory loaded with the demo verifies the identity and global-permission partitions' record
 * chains, and a hand edit of a user record or of the global grants (written into the LMDB files around
 * flowstore, as whoever holds the files could) fails it with exit 1, naming the partition.
 */
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EXIT } from "../../src/cli/exit.js";
import { GLOBAL, GLOBAL_KEYS } from "../../src/access/global.js";
import { PARTITION, userKey } from "../../src/identity/records.js";
import type { Key, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("verify-records");
});
afterEach(async () => removeTempDir(dir));

async function flowstore(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const r = run(args);
  const { code } = await r.exit;
  return { code, out: r.out(), err: r.err() };
}

/** Rewrites one record in the LMDB files directly (no chain event): answers a function putting the original back. */
async function handEdit(data: string, partition: Partition, key: Key, edit: (record: any) => void): Promise<() => Promise<void>> {
  const kv = LmdbKv.open(data);
  try {
    const original = (await kv.get(partition, key))!.value;
    const record = JSON.parse(Buffer.from(original).toString("utf8"));
    edit(record);
    await kv.commit(partition, [{ type: "put", key, value: Buffer.from(JSON.stringify(record)) }]);
    return async () => {
      const again = LmdbKv.open(data);
      await again.commit(partition, [{ type: "put", key, value: original }]);
      await again.close();
    };
  } finally {
    await kv.close();
  }
}

it("verifies users, groups and grants, and names a hand-edited user record or grant (exit 1)", async () => {
  const data = join(dir, "data");
  const demo = await flowstore(["demo", "--data", data, "--projects", "1", "--subprojects", "1", "--workflowitems", "2"]);
  expect(demo.code, demo.err).toBe(0);
  const clean = await flowstore(["verify", "--data", data]);
  expect(clean.code, clean.err).toBe(EXIT.ok);
  // The identity and global-permission chains, and the register of erasures (its chain started empty at open).
  expect(JSON.parse(clean.out)).toMatchObject({ ok: true, records: { ok: true, partitions: 3 } });

  // A user's record made an administrator's look-alike: its bytes no longer match its chain.
  const undo = await handEdit(data, PARTITION, userKey("tom"), (u) => (u.displayName = "Tom (administrator)"));
  const user = await flowstore(["verify", "--data", data]);
  expect(user.code).toBe(EXIT.verificationFailed);
  expect(user.out).toContain('"partition":["identity"]');
  expect(user.out).toContain("a record differs from its chain");
  await undo();
  expect((await flowstore(["verify", "--data", data])).code).toBe(EXIT.ok);

  // A grant slipped into the global permissions: global.createUser for tom.
  await handEdit(data, GLOBAL.partition(), GLOBAL_KEYS.permissions, (p) => (p["global.createUser"] = [...(p["global.createUser"] ?? []), "tom"]));
  const grant = await flowstore(["verify", "--data", data]);
  expect(grant.code).toBe(EXIT.verificationFailed);
  expect(grant.out).toContain('"partition":["global"]');
  expect(JSON.parse(grant.out.trim().split("\n").at(-1)!)).toMatchObject({ ok: false, records: { ok: false } });
});
