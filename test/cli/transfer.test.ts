import { createReadStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, expect, inject, it } from "vitest";
import { Archive } from "../../src/archive/archive.js";
import { exportStore, importSource, importStore, pendingRestore, replaceStore, restoreFinished, unfinishedImport } from "../../src/cli/transfer.js";
import { ValidationError } from "../../src/errors.js";
import { ALL_KINDS, openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { allPartitions, scanAll, type KvStore, type Partition } from "../../src/kv/contract.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { decode } from "../../src/kv/tuple.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ensureDemoIdentities, generateDemo } from "../../src/workflow/demo.js";
import { backends, forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { formioForm } from "../process-data/helpers.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { openKv } from "../../src/kv/open.js";
import { deleteNamespace } from "../setup/redis-keys.js";
import { run } from "./spawn.js";

/** Opens the whole store over `kv` (which stays open) for one piece of work. */
async function over<T>(kv: KvStore, run: (fs: Flowstore) => Promise<T>): Promise<T> {
  const fs = await openFlowstore(kv);
  try {
    return await run(fs);
  } finally {
    await fs.close();
  }
}

/** Fills a store with a bit of every layer's data. */
const populate = (kv: KvStore) =>
  over(kv, async ({ identity, workflow, tenancy, archive, processData: pd }) => {
    await identity.ensureRoot("root password 123");
    await identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "mary password" });
    await ensureDemoIdentities(identity, "demo password 123");
    await generateDemo(workflow, { projects: 2, subprojectsPerProject: 2, workflowitemsPerSubproject: 12 });
    await tenancy.writes.create(SYSTEM, "space", null, { name: "S" }, { id: "s1" });
    await tenancy.writes.create(SYSTEM, "tenant", { type: "space", ids: ["s1"] }, { name: "T" }, { id: "t1" });
    await tenancy.writes.create(SYSTEM, "kms", { type: "tenant", ids: ["t1"] }, { keyRef: "k" }, { id: "k1" });
    await archive.write(SYSTEM, "order-1", { $workflowgroup: ["Invoice"] }, [{ name: "a.bin", content: randomBytes(1_500_000) }]);
    await pd.put(SYSTEM, "bpm-form-submissions", "process/pi-1/task/t1", { id: "r", accessToken: "plain-access-token-0123456789", data: { a: 1 } }, { ttlMs: 3_600_000 });
    await pd.createStartMessage(SYSTEM, "order", { id: "m", data: {} });
    await pd.createFormSchema(SYSTEM, { id: "form-a", formData: formioForm("form-a") });
  });

const verifyAll = (kv: KvStore) => over(kv, (fs) => fs.verifyAll());

async function dump(kv: KvStore): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const kind of ALL_KINDS) {
    for await (const p of allPartitions(kv, kind)) {
      const rows: string[] = [];
      for await (const e of scanAll(kv, p)) rows.push(`${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
      if (rows.length > 0) out.set(JSON.stringify(p), rows);
    }
  }
  return out;
}

async function exported(kv: KvStore): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (c: Buffer) => chunks.push(c));
  await exportStore(kv, out);
  out.end();
  return Buffer.concat(chunks);
}

it("every partition kind any layer writes is known to export", async () => {
  const kv = new MemoryKv();
  await populate(kv);
  const kinds = new Set([...kv.data.partitions.keys()].map((k) => (decode(Buffer.from(k, "latin1"))[0] as unknown[])[0] as string));
  for (const kind of kinds) expect(ALL_KINDS).toContain(kind);
});

/** The export without its header line (which names the backend and the time): the data, in order. */
const body = (ndjson: Buffer): string => ndjson.toString().slice(ndjson.indexOf(10) + 1);

const chain = ["lmdb", "postgres", "redis-cluster", "lmdb"].map((name) => backends.find((b) => b.name === name));

it.runIf(chain.every(Boolean))("LMDB → PostgreSQL → Redis Cluster → LMDB: every export is byte for byte the first; chains verify at every step", async () => {
  const handles: BackendHandle[] = [];
  try {
    for (const backend of chain) handles.push(await backend!.create());
    await populate(handles[0]!.kv);
    const first = await exported(handles[0]!.kv);
    let previous = first;
    for (const next of handles.slice(1)) {
      await importStore(next.kv, Readable.from([previous]));
      const verified = await verifyAll(next.kv);
      expect(verified.ok).toBe(true);
      expect(verified.partitions).toBe(4);
      previous = await exported(next.kv);
      expect(body(previous)).toBe(body(first));
    }
    expect(await dump(handles[3]!.kv)).toEqual(await dump(handles[0]!.kv));
  } finally {
    await Promise.all(handles.map((h) => h.destroy()));
  }
});

forEachBackend((backend) => {
  let target: BackendHandle;
  beforeEach(async () => {
    target = await backend.create();
  });
  afterEach(async () => target.destroy());

  it("export → import into an empty store reproduces every partition byte for byte; chains verify; reads match", async () => {
    const source = new MemoryKv();
    await populate(source);
    const ndjson = await exported(source);
    const counts = await importStore(target.kv, Readable.from([ndjson]));
    expect(counts.partitions).toBeGreaterThan(10);
    expect(await dump(target.kv)).toEqual(await dump(source));
    const verified = await verifyAll(target.kv);
    expect(verified.ok).toBe(true);
    expect(verified.partitions).toBe(4); // two projects, the space and the tenant
    const jane = userActor("jane", ["finance"]);
    const read = (kv: KvStore) => over(kv, ({ workflow }) => workflow.subprojectDetails(jane, "demo-1", "sp-2"));
    expect(await read(target.kv)).toEqual(await read(source));
    expect((await new Archive(target.kv).latest(SYSTEM, "order-1")).files).toEqual((await new Archive(source).latest(SYSTEM, "order-1")).files);
    // And back: an export of this backend imports into LMDB byte for byte (LMDB → Redis Cluster → LMDB).
    const back = await backends.find((b) => b.name === "lmdb")!.create();
    try {
      await importStore(back.kv, Readable.from([await exported(target.kv)]));
      expect(await dump(back.kv)).toEqual(await dump(source));
      expect((await verifyAll(back.kv)).ok).toBe(true);
    } finally {
      await back.destroy();
    }
    // Importing again into the now non-empty store is refused; a cut-off export is refused.
    await expect(importStore(target.kv, Readable.from([ndjson]))).rejects.toBeInstanceOf(ValidationError);
    const fresh = await backend.create();
    try {
      const cut = ndjson.subarray(0, Math.floor(ndjson.length / 2));
      await expect(importStore(fresh.kv, Readable.from([cut.subarray(0, cut.lastIndexOf(10) + 1)]))).rejects.toMatchObject({ field: "input" });
    } finally {
      await fresh.destroy();
    }
    // Access tokens travel sealed: no exported value holds the plaintext.
    const values = ndjson
      .toString()
      .split("\n")
      .filter((l) => l.startsWith('{"k"'))
      .map((l) => Buffer.from(JSON.parse(l).v, "base64").toString("latin1"));
    expect(values.some((v) => v.includes("plain-access-token-0123456789"))).toBe(false);
  });
});

it("a restore (replaceStore) cut off while it drops the old content is finished by import --resume: the export's bytes", async () => {
  const source = new MemoryKv();
  await populate(source);
  const ndjson = await exported(source);
  const dir = await makeTempDir("replace");
  const file = join(dir, "export.ndjson");
  await writeFile(file, ndjson);
  // The live store: other content, and a backend that dies at its third partition drop.
  class Dying extends MemoryKv {
    drops = 0;
    override async dropPartition(partition: Partition): Promise<void> {
      if (++this.drops === 3) throw new Error("killed");
      return super.dropPartition(partition);
    }
  }
  const live = new Dying();
  await over(live, async ({ identity, workflow }) => {
    await identity.ensureRoot("another root password");
    for (const id of ["x", "y", "z"]) await workflow.createProject(SYSTEM, { id, displayName: id });
  });
  try {
    await expect(replaceStore(live, file, 1)).rejects.toThrow("killed");
    expect(await unfinishedImport(live)).not.toBeNull();
    expect(await importSource(live)).toBe(file);
    // Not a plain import over it, and not a resume from another export.
    await expect(importStore(live, createReadStream(file))).rejects.toMatchObject({ field: "store" });
    await importStore(live, createReadStream(file), undefined, { resume: true });
    expect(await unfinishedImport(live)).toBeNull();
    expect(await importSource(live)).toBeNull();
    // The restore's epoch stays until the restore is finished (its credentials kept, its fence opened).
    expect(await pendingRestore(live)).toBe(1);
    await restoreFinished(live);
    expect(await dump(live)).toEqual(await dump(source));
    expect((await verifyAll(live)).ok).toBe(true);
  } finally {
    await removeTempDir(dir);
  }
});

/**
 * `import --in FILE` on a store whose first reads take a round trip (Redis): the file's first chunk must
 * not be read (and lost) before the export's reader starts; a valid export imports whole, as from stdin.
 */
it.runIf(inject("redis"))(
  "flowstore import --in FILE reads a valid export whole (the first chunk is not lost before the reader starts)",
  async () => {
    const dir = await makeTempDir("import-in");
    const redis = inject("redis")!;
    const space = `import_in_${process.pid}_${randomBytes(4).toString("hex")}`;
    try {
      const source = new MemoryKv();
      await populate(source); // its archive file makes the export far larger than one read chunk
      const ndjson = await exported(source);
      expect(ndjson.length).toBeGreaterThan(256 * 1024);
      const file = join(dir, "export.ndjson");
      await writeFile(file, ndjson);
      const url = `${redis.standalone}?namespace=${space}`;
      const imported = run(["import", "--in", file, "--store", url], { FLOWSTORE_DATA: dir });
      const exit = await imported.exit;
      expect(imported.err()).not.toMatch(/not JSON/);
      expect(exit.code, imported.err()).toBe(0);
      const kv = await openKv(url);
      try {
        expect(await dump(kv)).toEqual(await dump(source));
      } finally {
        await kv.close();
      }
    } finally {
      await deleteNamespace(redis.standalone, space);
      await removeTempDir(dir);
    }
  },
  120_000,
);
