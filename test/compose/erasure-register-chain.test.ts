/**
 * The register of erasures under a record chain (issue 26; personal/subjects.ts REGISTER_CHAIN), over
 * real LMDB and real reopenings of the store, and the real `flowstore verify`:
 * - a receipt planted into the register alone (written into the files past the store, as the review of
 *   seal26b did) disables nothing at the next open, deletes no key, refuses no enabling, and verify fails
 *   naming `["erased"]`;
 * - an erasure registers its receipt through the chain as the eraser; verify passes, before and after a
 *   reopen, and the erased account stays disabled, its enabling refused;
 * - the chain starts at the first open, even empty (so a planted receipt is never adopted as one written
 *   before the chain); a register written before the chain is adopted into it at the next open (by the
 *   system), and acted on;
 * - a registered receipt edited past the store fails verify naming the register.
 */
import { describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { EXIT } from "../../src/cli/exit.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { CHAIN, recordEvents, type RecordEvent } from "../../src/kv/record-chain.js";
import { registerLayout, subjectLayout, USER_HOLDER } from "../../src/personal/subjects.js";
import { PARTITION } from "../../src/identity/records.js";
import { tempDir } from "../support/temp-dir.js";
import { run } from "../cli/spawn.js";

const dir = tempDir("erasure-register-chain", "each");
const REGISTER = registerLayout.partition;

/** Opens the LMDB store in `dir()`, runs `fn` over the store and its raw kv, closes both. */
async function opened<T>(fn: (fs: Flowstore, kv: KvStore) => Promise<T>): Promise<T> {
  const kv = LmdbKv.open(dir());
  try {
    const fs = await openFlowstore(kv);
    try {
      return await fn(fs, kv);
    } finally {
      await fs.close();
    }
  } finally {
    await kv.close();
  }
}

/** Writes into the LMDB files directly, past flowstore (no chain event), as whoever holds the files could. */
async function pastTheStore(fn: (kv: KvStore) => Promise<unknown>): Promise<void> {
  const kv = LmdbKv.open(dir());
  try {
    await fn(kv);
  } finally {
    await kv.close();
  }
}

/** verifyAll's answer and the partitions it named as failing. */
async function verified(fs: Flowstore): Promise<{ ok: boolean; failed: Partition[] }> {
  const failed: Partition[] = [];
  const r = await fs.verifyAll((partition, result) => {
    if (!result.ok) failed.push(partition);
  });
  return { ok: r.ok, failed };
}

/** The register's chain events (all of them). */
async function registerEvents(kv: KvStore): Promise<RecordEvent[]> {
  const head = await kv.get(REGISTER, CHAIN.pack(["head"]));
  const seq = head ? (JSON.parse(head.value.toString("utf8")) as { seq: number }).seq : 0;
  return recordEvents(kv, REGISTER, 1, seq);
}

const identityHead = async (kv: KvStore) => (await kv.get(PARTITION, CHAIN.pack(["head"])))?.value.toString("utf8");

/** A store with root, the user paula, and dpo holding global.eraseSubject. */
async function setUp(): Promise<void> {
  await opened(async (fs) => {
    await fs.identity.ensureRoot("root password 123");
    await fs.identity.createUser(SYSTEM, { id: "paula", displayName: "Paula P", password: "paula password 1" });
    await fs.identity.createUser(SYSTEM, { id: "dpo", displayName: "Data Protection", password: "dpo password 12" });
    await fs.global.grant(SYSTEM, "global.eraseSubject", "dpo");
  });
}

/** dpo erases the subject paula (its user account). */
const eraseAsDpo = async (fs: Flowstore) => fs.eraseSubject(await fs.identity.actorFor("dpo"), "paula");

describe("the register of erasures under a record chain", () => {
  it("a receipt planted into the register alone disables nothing at the next open, and verify names the register", async () => {
    await setUp();
    let identityBefore: string | undefined;
    await pastTheStore(async (kv) => {
      identityBefore = await identityHead(kv);
      const receipt = {
        subject: "paula",
        erasedAt: new Date().toISOString(),
        erasedBy: "root",
        keyId: "0000000000000000",
        resources: [{ type: USER_HOLDER, ids: ["paula"], fields: ["displayName"] }],
        complete: true,
      };
      await kv.commit(REGISTER, [{ type: "put", key: registerLayout.key("paula"), value: Buffer.from(JSON.stringify(receipt)) }]);
    });

    await opened(async (fs, kv) => {
      // Not disabled, its key not deleted (the name still opens), the identity chain untouched by the open.
      expect(await fs.identity.getUser("paula")).toMatchObject({ enabled: true, displayName: "Paula P" });
      expect(await kv.get(subjectLayout.partition("paula"), subjectLayout.key)).toBeDefined();
      expect(await identityHead(kv)).toBe(identityBefore);
      expect(await verified(fs)).toEqual({ ok: false, failed: [REGISTER] });
      // The enable refusal does not act on it either.
      await fs.identity.disableUser(SYSTEM, "paula");
      expect((await fs.identity.enableUser(SYSTEM, "paula")).enabled).toBe(true);
    });

    // The real `flowstore verify` over the files: exit 1, naming the register.
    const cli = run(["verify", "--data", dir()]);
    expect((await cli.exit).code, cli.err()).toBe(EXIT.verificationFailed);
    expect(cli.out()).toContain('"partition":["erased"]');
  });

  it("an erasure registers its receipt through the chain as the eraser: verify passes, the account stays disabled", async () => {
    await setUp();
    await opened(async (fs, kv) => {
      const receipt = await eraseAsDpo(fs);
      expect(receipt).toMatchObject({ subject: "paula", erasedBy: "dpo", complete: true });
      const events = await registerEvents(kv);
      // The chain started empty at the first open (the system's), then the incomplete receipt with the
      // key's destruction and the complete one: each the eraser's.
      expect(events.map((e) => [e.actor, e.changes.length])).toEqual([
        ["system", 0],
        ["dpo", 1],
        ["dpo", 1],
      ]);
      expect((await verified(fs)).ok).toBe(true);
    });
    await opened(async (fs, kv) => {
      expect(await fs.identity.getUser("paula")).toMatchObject({ enabled: false, displayName: "(erased)" });
      await expect(fs.identity.enableUser(SYSTEM, "paula")).rejects.toMatchObject({ field: "id" });
      expect(await verified(fs)).toEqual({ ok: true, failed: [] });
      expect(await registerEvents(kv)).toHaveLength(3); // the open wrote nothing more
    });
  });

  it("a register written before its chain is adopted at the next open, and still keeps the account disabled", async () => {
    await setUp();
    await opened(eraseAsDpo);
    // As a store written before the chain holds it: the register's receipt without the chain's keys.
    await pastTheStore((kv) => kv.commit(REGISTER, [{ type: "deletePrefix", prefix: CHAIN.prefix }]));
    await opened(async (fs, kv) => {
      const events = await registerEvents(kv);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ actor: "system", adopted: 1 });
      expect(await verified(fs)).toEqual({ ok: true, failed: [] });
      expect(await fs.identity.getUser("paula")).toMatchObject({ enabled: false });
      await expect(fs.identity.enableUser(SYSTEM, "paula")).rejects.toMatchObject({ field: "id" });
    });
  });

  it("a registered receipt edited past the store fails verify naming the register", async () => {
    await setUp();
    await opened(eraseAsDpo);
    await pastTheStore(async (kv) => {
      const entry = (await kv.get(REGISTER, registerLayout.key("paula")))!;
      const receipt = JSON.parse(entry.value.toString("utf8"));
      receipt.erasedBy = "root";
      await kv.commit(REGISTER, [{ type: "put", key: registerLayout.key("paula"), value: Buffer.from(JSON.stringify(receipt)) }]);
    });
    await opened(async (fs) => {
      expect(await verified(fs)).toEqual({ ok: false, failed: [REGISTER] });
    });
  });
});
