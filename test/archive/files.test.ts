import { SYSTEM } from "../../src/access/actor.js";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Archive, CHUNK_SIZE } from "../../src/archive/index.js";
import { TooLargeError, ValidationError } from "../../src/errors.js";
import type { KvStore } from "../../src/kv/contract.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { eventually } from "../support/eventually.js";
import { collect, countEntries, dump, MiB, pattern, sha256, sha256Of } from "./helpers.js";

async function rejects(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

/** Chunk partitions holding data, and the chunks (not the "done" markers) in them. */
async function chunkStats(kv: KvStore) {
  const lines = (await dump(kv)).filter((l) => l.startsWith('["archive-chunks"'));
  return { partitions: lines.length, chunks: await countEntries(kv, "archive-chunks", (key) => typeof key[0] === "number") };
}

/** A stream that yields `bytes` then fails as a cut-off upload would. */
function cutOff(bytes: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= bytes) {
        this.destroy(new Error("connection reset"));
        return;
      }
      const n = Math.min(256 * 1024, bytes - sent);
      sent += n;
      this.push(Buffer.alloc(n, 7));
    },
  });
}

forEachBackend((backend) => {
  describe("archive files", () => {
    let h: BackendHandle;
    let kv: KvStore;
    beforeEach(async () => {
      h = await backend.create();
      kv = h.kv;
    });
    afterEach(async () => h.destroy());

    it("streams files in and out in 1 MiB chunks, with size and sha-256", async () => {
      const a = new Archive(kv);
      const small = Buffer.from("hello archive");
      const s = await a.write(SYSTEM, "u", { n: [1] }, [
        { name: "big.bin", content: pattern(2 * MiB + 123, 1) },
        { name: "small.txt", content: small },
        { name: "empty", content: Buffer.alloc(0) },
      ]);
      const expected = await sha256Of(pattern(2 * MiB + 123, 1));
      const snap = await a.read(SYSTEM, s.id);
      const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
      expect(snap.files).toEqual([
        { name: "big.bin", size: expected.size, sha256: expected.sha256, md5: md5(await collect(pattern(2 * MiB + 123, 1))) },
        { name: "small.txt", size: small.length, sha256: sha256(small), md5: md5(small) },
        { name: "empty", size: 0, sha256: sha256(Buffer.alloc(0)), md5: md5(Buffer.alloc(0)) },
      ]);
      expect(snap.size).toBe(Buffer.byteLength('{"n":[1]}') + expected.size + small.length);
      const f = await a.openFile(SYSTEM, s.id, "big.bin");
      expect({ size: f.size, sha256: f.sha256 }).toEqual(expected);
      expect(await sha256Of(f.stream)).toEqual(expected);
      expect(await collect((await a.openFile(SYSTEM, s.id, "small.txt")).stream)).toEqual(small);
      expect((await collect((await a.openFile(SYSTEM, s.id, "empty")).stream)).length).toBe(0);
      // 2 MiB + 123 bytes is three chunks; the small file one; the empty file none (only its marker).
      expect(await chunkStats(kv)).toEqual({ partitions: 3, chunks: 4 });
      expect(CHUNK_SIZE).toBe(MiB);
    });

    it("stores a content once however many snapshots hold it, and frees it with its last holder", async () => {
      const a = new Archive(kv);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const s = await a.write(SYSTEM, `u${i % 2}`, { i: [i] }, [
          { name: "shared.bin", content: pattern(3 * MiB, 42) },
          { name: `own-${i}.bin`, content: pattern(MiB / 2, 100 + i) },
        ]);
        ids.push(s.id);
      }
      // The shared file's 3 chunks once, plus one chunk per own file.
      expect(await chunkStats(kv)).toEqual({ partitions: 6, chunks: 3 + 5 });
      const shared = (await a.read(SYSTEM, ids[0]!)).files[0]!.sha256;
      const meta = await kv.get(["archive-file", shared], ["meta"]);
      expect(JSON.parse(meta!.value.toString()).refs).toBe(5);

      for (const id of ids.slice(0, 4)) await a.delete(SYSTEM, id);
      // Only the last holder's chunks remain, and its files read back whole.
      expect(await chunkStats(kv)).toEqual({ partitions: 2, chunks: 3 + 1 });
      const f = await a.openFile(SYSTEM, ids[4]!, "shared.bin");
      expect(await sha256Of(f.stream)).toEqual(await sha256Of(pattern(3 * MiB, 42)));
      await a.delete(SYSTEM, ids[4]!);
      expect(await dump(kv)).toEqual([]);
    });

    it("keeps reference counts right under concurrent writes and deletes of one content", async () => {
      const a = new Archive(kv);
      const write = (i: number) => a.write(SYSTEM, `c${i}`, { i: [i] }, [{ name: "same", content: pattern(MiB + MiB / 2, 8) }]);
      const first = await Promise.all([0, 1, 2, 3, 4, 5].map(write));
      expect(await chunkStats(kv)).toEqual({ partitions: 1, chunks: 2 });
      const sha = first[0]!.id && (await a.read(SYSTEM, first[0]!.id)).files[0]!.sha256;
      const refs = async () => JSON.parse((await kv.get(["archive-file", sha], ["meta"]))!.value.toString()).refs;
      expect(await refs()).toBe(6);
      const [, second] = await Promise.all([Promise.all(first.slice(0, 3).map((s) => a.delete(SYSTEM, s.id))), Promise.all([6, 7, 8].map(write))]);
      expect(await refs()).toBe(6);
      expect(await chunkStats(kv)).toEqual({ partitions: 1, chunks: 2 });
      expect((await sha256Of((await a.openFile(SYSTEM, second[0]!.id, "same")).stream)).sha256).toBe(sha);
      await Promise.all([...first.slice(3), ...second].map((s) => a.delete(SYSTEM, s.id)));
      expect(await dump(kv)).toEqual([]);
    });

    it("the same content twice in one snapshot is stored once and freed once", async () => {
      const a = new Archive(kv);
      const s = await a.write(SYSTEM, "u", {}, [
        { name: "a", content: pattern(MiB + 1, 9) },
        { name: "b", content: pattern(MiB + 1, 9) },
      ]);
      expect(await chunkStats(kv)).toEqual({ partitions: 1, chunks: 2 });
      await a.delete(SYSTEM, s.id);
      expect(await dump(kv)).toEqual([]);
    });

    it("refuses a snapshot over the limit with a TooLargeError naming it, and stores nothing of it", async () => {
      const a = new Archive(kv, { maxSnapshotBytes: 3 * MiB });
      const kept = await a.write(SYSTEM, "u", {}, [{ name: "shared", content: pattern(MiB, 5) }]);
      const before = await dump(kv);
      // The first file fits and is promoted (sharing content with `kept`), the second overflows mid-stream.
      const e = await rejects(
        a.write(SYSTEM, "u", { x: ["y"] }, [
          { name: "shared", content: pattern(MiB, 5) },
          { name: "huge", content: pattern(10 * MiB, 6) },
        ]),
      );
      expect(e).toBeInstanceOf(TooLargeError);
      expect((e as TooLargeError).status).toBe(413);
      expect((e as TooLargeError).limit).toBe(3 * MiB);
      expect((e as TooLargeError).message).toContain("3 MiB");
      expect(await dump(kv)).toEqual(before);
      const meta = await kv.get(["archive-file", (await a.read(SYSTEM, kept.id)).files[0]!.sha256], ["meta"]);
      expect(JSON.parse(meta!.value.toString()).refs).toBe(1);
      // A declared size over the limit fails before any byte is read; so does a document alone.
      const declared = pattern(4 * MiB, 1);
      expect(await rejects(a.write(SYSTEM, "u", {}, [{ name: "d", content: declared, size: 4 * MiB }]))).toBeInstanceOf(TooLargeError);
      expect(await rejects(a.write(SYSTEM, "u", { big: ["x".repeat(3 * MiB)] }))).toBeInstanceOf(TooLargeError);
      // Exactly at the limit is fine.
      const doc = {};
      await a.write(SYSTEM, "v", doc, [{ name: "exact", content: pattern(3 * MiB - 2, 3) }]);
      expect(await dump(kv)).not.toEqual(before);
    });

    it("a stream cut off half-way fails with a ValidationError and leaves no orphan chunks", async () => {
      const a = new Archive(kv);
      const before = await dump(kv);
      const e = await rejects(a.write(SYSTEM, "u", {}, [{ name: "cut", content: cutOff(2 * MiB + 512 * 1024) }]));
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).field).toBe("files[0].content");
      expect(await dump(kv)).toEqual(before);
      // Files may come one at a time from an async source (as multipart parts do).
      async function* parts() {
        yield { name: "one", content: Buffer.from("1") };
        yield { name: "two", content: cutOff(MiB) };
      }
      expect(await rejects(a.write(SYSTEM, "u", {}, parts()))).toBeInstanceOf(ValidationError);
      expect(await dump(kv)).toEqual(before);
      // A source of files that fails is a ValidationError on `files`.
      async function* failing() {
        yield { name: "one", content: pattern(MiB + 1, 4) };
        throw new Error("multipart parse error");
      }
      const f = await rejects(a.write(SYSTEM, "u", {}, failing()));
      expect((f as ValidationError).field).toBe("files");
      expect(await dump(kv)).toEqual(before);
    });

    it("retention keeps the newest N snapshots per unique id and frees only unshared chunks", async () => {
      let clock = 1_000_000;
      const a = new Archive(kv, { keepNewest: 2, now: () => clock++ });
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const s = await a.write(SYSTEM, "u", { i: [i] }, [
          { name: "shared", content: pattern(MiB, 1) },
          { name: "own", content: pattern(1000, 10 + i) },
        ]);
        ids.push(s.id);
      }
      await a.write(SYSTEM, "other", {}, [{ name: "x", content: pattern(MiB, 2) }]);
      expect((await a.findSnapshotsByUniqueId(SYSTEM, "u")).items.map((s) => s.id)).toEqual(ids.slice(2));
      expect((await a.findSnapshotsByDate(SYSTEM, "1970-01-01")).items.map((s) => s.id)).toEqual([...ids.slice(2), "other-1000004"]);
      // shared (1 chunk) + two own files + other's file.
      expect(await chunkStats(kv)).toEqual({ partitions: 4, chunks: 4 });
      // An explicit call with a smaller N.
      expect(await a.applyRetention(SYSTEM, "u", 1)).toBe(1);
      expect((await a.latest(SYSTEM, "u")).document).toEqual({ i: [3] });
      expect(await chunkStats(kv)).toEqual({ partitions: 3, chunks: 3 });
    });

    it("recovery removes the staging of an abandoned write", async () => {
      const a = new Archive(kv);
      await a.write(SYSTEM, "keep", {}, [{ name: "k", content: pattern(MiB, 77) }]);
      const before = await dump(kv);
      let release!: (e: Error) => void;
      const stuck = new Promise<never>((_, reject) => (release = reject));
      async function* hanging() {
        for (let i = 0; i < 3; i++) yield Buffer.alloc(MiB, i);
        await stuck;
      }
      // The first file's content is already stored (shared), the second hangs mid-stream.
      const pending = a.write(SYSTEM, "u", {}, [
        { name: "shared", content: pattern(MiB, 77) },
        { name: "h", content: hanging() },
      ]);
      pending.catch(() => {});
      // Wait for all three chunks (a killed process has no commit in flight; this one must not either).
      await eventually(async () => (await chunkStats(kv)).chunks >= 1 + 1 + 3, { what: "the upload's three chunks stored", intervalMs: 5 });
      // Another process (here: another Archive over the same store) sweeps what it does not run.
      const report = await new Archive(kv).recover();
      expect(report.uploadsRolledBack).toBe(1);
      expect(await dump(kv)).toEqual(before);
      // The abandoned write's own process is not swept by its own recovery.
      release(new Error("gone"));
      expect(await rejects(pending)).toBeInstanceOf(ValidationError);
      expect(await dump(kv)).toEqual(before);
    });

    it("recovery completes a write killed after its commit point and a delete killed after its own", async () => {
      const a = new Archive(kv);
      const s = await a.write(SYSTEM, "u", {}, [{ name: "f", content: pattern(MiB + 5, 3) }]);
      const snap = await a.read(SYSTEM, s.id);
      const header = JSON.parse((await kv.get(["archive", "u"], ["snap", Date.parse(snap.modified)]))!.value.toString());
      // Replay the state a process killed between the snapshot commit and the end leaves behind.
      await kv.commit(["archive-journal"], [{ type: "put", key: ["upload", header.upload], value: Buffer.from(JSON.stringify({ uniqueId: "u", startedAt: 0 })) }]);
      await kv.commit(["archive-date", snap.modified.slice(0, 10)], [{ type: "deletePrefix", prefix: [] }]);
      const r1 = await new Archive(kv).recover();
      expect(r1.uploadsCompleted).toBe(1);
      expect((await a.findSnapshotsByDate(SYSTEM, snap.modified.slice(0, 10))).items.map((x) => x.id)).toEqual([s.id]);
      expect(await sha256Of((await a.openFile(SYSTEM, s.id, "f")).stream)).toEqual({ sha256: snap.files[0]!.sha256, size: MiB + 5 });

      // A delete killed right after its commit point: header gone, references and date entry still there.
      const millis = Date.parse(snap.modified);
      await kv.commit(
        ["archive-journal"],
        [
          {
            type: "put",
            key: ["delete", s.id, "t1"],
            value: Buffer.from(JSON.stringify({ uniqueId: "u", millis, indexed: header.indexed, upload: header.upload, files: [snap.files[0]!.sha256], startedAt: 0 })),
          },
        ],
      );
      await kv.commit(["archive", "u"], [{ type: "deletePrefix", prefix: [] }]);
      const r2 = await new Archive(kv).recover();
      expect(r2.deletesCompleted).toBe(1);
      expect(await dump(kv)).toEqual([]);
    });
  });
});
