import { expect, it } from "vitest";
import { MemoryKv } from "../src/kv/memory.js";
import { openFlowstore, PARTITION_KINDS, SYSTEM, userActor, ValidationError } from "../src/index.js";
import { formioForm } from "./process-data/helpers.js";
import { makeTempDirSync, removeTempDirSync } from "./support/temp-dir.js";

it("openFlowstore gives the whole store over LMDB, and the data survives a reopen", async () => {
  const dir = makeTempDirSync("index");
  try {
    const mary = userActor("mary");
    let fs = await openFlowstore(`lmdb:${dir}`);
    await expect(fs.global.grant(SYSTEM, "global.createProject", "mary")).rejects.toBeInstanceOf(ValidationError); // no such user yet
    await fs.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "a long password" });
    await fs.global.grant(SYSTEM, "global.createProject", "mary");
    await fs.workflow.createProject(mary, { id: "p", displayName: "P" });
    await fs.workflow.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
    await fs.tenancy.writes.create(SYSTEM, "space", null, { name: "space" }, { id: "sp" });
    await fs.archive.write(SYSTEM, "order-1", { status: ["done"] });
    await fs.processData.createFormSchema(SYSTEM, { id: "form-a", formData: formioForm("form-a") });
    await fs.close();
    fs = await openFlowstore(dir);
    expect((await fs.workflow.projectDetails(mary, "p")).subprojects.items.map((s) => s.id)).toEqual(["s"]);
    expect((await fs.tenancy.reads.get(SYSTEM, { type: "space", ids: ["sp"] })).data.name).toBe("space");
    expect((await fs.archive.latest(SYSTEM, "order-1")).document).toEqual({ status: ["done"] });
    expect((await fs.processData.get(SYSTEM, "bpm-form-schemas", "form-a")).fields).toMatchObject({ id: "form-a" });
    // Every chain: the project's partition and the space's; the users' and the grants' record chains.
    expect(await fs.verifyAll()).toEqual({
      ok: true,
      partitions: 2,
      events: expect.any(Number),
      bad: 0,
      incremental: 0,
      // The identity and global-permission chains, and the register of erasures (its chain started empty at open).
      records: { ok: true, partitions: 3, events: expect.any(Number) },
      epochs: { ok: true, list: [] },
    });
    await fs.close();
    await expect(openFlowstore("ftp://nope")).rejects.toBeInstanceOf(ValidationError);
  } finally {
    removeTempDirSync(dir);
  }
});

it("a KvStore passed in stays the caller's: close() stops the store's timers and leaves it open", async () => {
  const kv = new MemoryKv();
  const fs = await openFlowstore(kv, { instrument: (inner) => inner, clock: () => Date.parse("2030-01-02T03:04:05Z") });
  const created = await fs.workflow.createProject(SYSTEM, { id: "p", displayName: "P" });
  expect(created.meta.createdAt).toBe("2030-01-02T03:04:05.000Z");
  await fs.close();
  await fs.close(); // twice is fine
  expect(await kv.get(["global"], ["nothing"])).toBeUndefined(); // still open
  const again = await openFlowstore(kv);
  expect((await again.workflow.projectDetails(SYSTEM, "p")).project.id).toBe("p");
  await again.close();
  await kv.close();
});

it("the registry of partition kinds names each kind once, with the layer that writes it", () => {
  const kinds = PARTITION_KINDS.map((k) => k.kind);
  expect(new Set(kinds).size).toBe(kinds.length);
  expect(
    PARTITION_KINDS.filter((k) => k.chained)
      .map((k) => k.layer)
      .sort(),
  ).toEqual(expect.arrayContaining(["tenancy", "workflow"]));
  for (const layer of ["resources", "identity", "archive", "process-data"]) expect(PARTITION_KINDS.some((k) => k.layer === layer)).toBe(true);
});
