/**
 * The access layer as a library sees it (every backend): the intent registry each domain contributes
 * to, global intents checked by the archive and process data themselves, and grants to unknown
 * identities refused by the domain (global and per resource).
 */
import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SYSTEM, userActor, type Actor } from "../../src/access/actor.js";
import { ACCESS_INTENTS, IntentRegistry, requestedIntent } from "../../src/access/intents.js";
import { Archive, ARCHIVE_INTENTS } from "../../src/archive/index.js";
import { ForbiddenError, ValidationError } from "../../src/errors.js";
import { BACKUP_INTENTS } from "../../src/compose/backup.js";
import { SUBSCRIPTION_INTENTS } from "../../src/subscriptions/subscriptions.js";
import { ERASURE_INTENTS } from "../../src/compose/erasure.js";
import { RATES_INTENTS } from "../../src/workflow/rates.js";
import { flowstoreIntents } from "../../src/compose/intents.js";
import { Identity, IDENTITY_INTENTS } from "../../src/identity/index.js";
import { keys } from "../../src/process-data/keys.js";
import { openProcessData, PROCESS_DATA_INTENTS, type ProcessData } from "../../src/process-data/service.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const pw = "a long enough password";
const ann = userActor("ann");
const bob = userActor("bob", ["clerks"]);

/** Resolves to the error a promise rejects with (fails when it resolves). */
async function refusal(p: Promise<unknown>): Promise<Error & { field?: string }> {
  return p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (e: Error) => e,
  );
}

describe("the intent registry", () => {
  it("holds access's own intents and every domain's, each once", () => {
    const registry = flowstoreIntents(workflowSchema, tenancySchema);
    expect([...registry.list()].sort()).toEqual(
      [
        ...ACCESS_INTENTS,
        ...IDENTITY_INTENTS,
        ...ARCHIVE_INTENTS,
        ...PROCESS_DATA_INTENTS,
        ...BACKUP_INTENTS,
        ...SUBSCRIPTION_INTENTS,
        ...ERASURE_INTENTS,
        ...RATES_INTENTS,
        "global.createProject",
        "global.createSpace",
      ].sort(),
    );
    expect(workflowSchema.globalIntents).toEqual(["global.createProject"]);
    expect(tenancySchema.globalIntents).toEqual(["global.createSpace"]);
    expect(new IntentRegistry().add(ARCHIVE_INTENTS).add(ARCHIVE_INTENTS).list()).toEqual([...ACCESS_INTENTS, ...ARCHIVE_INTENTS]);
  });

  it("takes only global intents", () => {
    expect(() => new IntentRegistry().add(["project.close"])).toThrow(/global/);
    expect(() => new IntentRegistry(["global."])).toThrow(/global/);
  });
});

forEachBackend((backend) => {
  let h: BackendHandle;
  let identity: Identity;
  beforeEach(async () => {
    h = await backend.create();
    identity = new Identity(h.kv, { intents: flowstoreIntents(workflowSchema, tenancySchema) });
    await identity.ensureRoot(pw);
    await identity.createUser(SYSTEM, { id: "ann", displayName: "Ann", password: pw });
    await identity.createUser(SYSTEM, { id: "bob", displayName: "Bob", password: pw });
    await identity.createGroup(SYSTEM, { id: "clerks", displayName: "Clerks", members: ["bob"] });
  });
  afterEach(async () => {
    await h.destroy();
  });

  it("gives root every intent of the registry", async () => {
    const root = await identity.actorFor("root");
    expect(await identity.global.held(root)).toEqual(identity.global.intents.list());
    expect(identity.global.intents.list()).toContain("global.writeProcessData");
    expect(await identity.global.held(ann)).toEqual([]);
  });

  describe("grants to unknown identities", () => {
    it("global: refused naming identity, even for the system actor; known users and groups are fine; revoking from the unknown is allowed", async () => {
      const global = identity.global;
      for (const actor of [SYSTEM, await identity.actorFor("root")]) {
        const e = await refusal(global.grant(actor, "global.createProject", "ghost"));
        expect(e).toBeInstanceOf(ValidationError);
        expect(e.field).toBe("identity");
      }
      expect((await global.list(SYSTEM))["global.createProject"]).toEqual(["root"]);
      await global.grant(SYSTEM, "global.createProject", "ann");
      await global.grant(SYSTEM, "global.createProject", "clerks");
      expect(await global.has(bob, "global.createProject")).toBe(true);
      await global.revoke(SYSTEM, "global.createProject", "ghost");
      expect((await refusal(global.grant(SYSTEM, requestedIntent("global.everything"), "ann"))).field).toBe("intent");
    });

    it("a global intent is typed from the declared lists: a misspelt one fails tsc (the run-time check stays for requests)", async () => {
      const global = identity.global;
      // @ts-expect-error "global.creatUser" is no declared intent
      const misspelt = () => global.assert(SYSTEM, "global.creatUser");
      expect(typeof misspelt).toBe("function");
      // Every declared domain's intents and a schema's derived create intents type-check.
      for (const intent of [
        "global.createUser",
        "global.readArchive",
        "global.writeProcessData",
        "global.createBackup",
        "global.createProject",
        "global.createSpace",
        ...ACCESS_INTENTS,
      ] as const) {
        expect(await global.has(SYSTEM, intent)).toBe(true);
      }
    });

    it("resources: refused naming identity before anything is written; revoking from the unknown is allowed", async () => {
      const store = new ResourceStore(h.kv, workflowSchema, { global: identity.global, identities: identity });
      const wf = new Workflow(store);
      await identity.global.grant(SYSTEM, "global.createProject", "ann");
      await wf.createProject(ann, { id: "p", displayName: "P", projectedBudgets: [] });
      const ref = { type: "project", ids: ["p"] };
      const before = await store.reads.listPermissions(SYSTEM, ref);
      for (const actor of [SYSTEM, ann]) {
        const e = await refusal(store.writes.grant(actor, ref, "project.viewDetails", "ghost"));
        expect(e).toBeInstanceOf(ValidationError);
        expect(e.field).toBe("identity");
      }
      expect(await store.reads.listPermissions(SYSTEM, ref)).toEqual(before);
      await store.writes.grant(ann, ref, "project.viewDetails", "clerks");
      expect((await store.reads.listPermissions(SYSTEM, ref))["project.viewDetails"]).toContain("clerks");
      await store.writes.revoke(ann, ref, "project.viewDetails", "ghost");

      const tenancy = new ResourceStore(h.kv, tenancySchema, { global: identity.global, identities: identity });
      await tenancy.writes.create(SYSTEM, "space", null, { name: "S" }, { id: "s" });
      expect((await refusal(tenancy.writes.grant(SYSTEM, { type: "space", ids: ["s"] }, "space.viewDetails", "ghost"))).field).toBe("identity");
    });
  });

  describe("the archive checks global.readArchive and global.writeArchive itself", () => {
    let archive: Archive;
    let id: string;
    let day: string;
    beforeEach(async () => {
      archive = new Archive(h.kv, { global: identity.global });
      const written = await archive.write(SYSTEM, "order-1", { a: [1] }, [{ name: "f.txt", content: Buffer.from("hello") }]);
      id = written.id;
      day = written.modified.slice(0, 10);
    });

    const reads = (a: Actor) => [
      () => archive.read(a, id),
      () => archive.latest(a, "order-1"),
      () => archive.openFile(a, id, "f.txt"),
      () => archive.findSnapshotsByUniqueId(a, "order-1"),
      () => archive.findSnapshotsByDate(a, day),
    ];

    it("refuses reads without global.readArchive and serves them with it (through a group too)", async () => {
      for (const read of reads(bob)) expect(await refusal(read())).toBeInstanceOf(ForbiddenError);
      await identity.global.grant(SYSTEM, "global.writeArchive", "clerks");
      for (const read of reads(bob)) expect(await refusal(read())).toBeInstanceOf(ForbiddenError);
      await identity.global.grant(SYSTEM, "global.readArchive", "clerks");
      for (const read of reads(bob)) await read();
      expect((await archive.read(bob, id)).document).toEqual({ a: [1] });
    });

    it("refuses writes without global.writeArchive, storing nothing, and serves them with it", async () => {
      await identity.global.grant(SYSTEM, "global.readArchive", "ann");
      expect(await refusal(archive.write(ann, "order-2", { b: [1] }))).toBeInstanceOf(ForbiddenError);
      expect(await refusal(archive.delete(ann, id))).toBeInstanceOf(ForbiddenError);
      expect(await refusal(archive.applyRetention(ann, "order-1", 1))).toBeInstanceOf(ForbiddenError);
      expect((await archive.findSnapshotsByUniqueId(ann, "order-2")).items).toEqual([]);
      expect((await archive.read(ann, id)).id).toBe(id);

      await identity.global.grant(SYSTEM, "global.writeArchive", "ann");
      const written = await archive.write(ann, "order-2", { b: [1] });
      expect(await archive.applyRetention(ann, "order-2", 1)).toBe(0);
      await archive.delete(ann, written.id);
      await archive.delete(ann, id);
      expect((await archive.findSnapshotsByUniqueId(ann, "order-1")).items).toEqual([]);
    });
  });

  describe("process data checks global.readProcessData and global.writeProcessData itself", () => {
    let pd: ProcessData;
    const FS = "bpm-form-submissions";
    const task = keys.task("pi-1", "t1");
    beforeEach(async () => {
      pd = await openProcessData(h.kv, { encryptionKey: randomBytes(32), global: identity.global });
      await pd.put(SYSTEM, FS, task, { data: { a: 1 }, accessToken: "tok" });
    });

    const reads = (a: Actor) => [
      () => pd.get(a, FS, task),
      () => pd.list(a, FS),
      () => pd.listByProcessInstance(a, "pi-1"),
      () => pd.listSignatures(a, "pi-1"),
      () => pd.listStartForms(a, "def"),
      () => pd.listStartMessages(a, "def"),
      async () => {
        for await (const _ of pd.export(a)) void _;
      },
    ];
    const writes = (a: Actor) => [
      () => pd.put(a, FS, keys.task("pi-2", "t"), { data: 1 }),
      () => pd.createStartForm(a, "def", { data: {} }),
      () => pd.createStartMessage(a, "def", { data: {} }),
      () => pd.delete(a, FS, task),
      () => pd.deleteProcessInstance(a, "pi-1"),
    ];

    it("refuses reads without global.readProcessData and serves them with it", async () => {
      await identity.global.grant(SYSTEM, "global.writeProcessData", "ann");
      for (const read of reads(ann)) expect(await refusal(read())).toBeInstanceOf(ForbiddenError);
      await identity.global.grant(SYSTEM, "global.readProcessData", "ann");
      for (const read of reads(ann)) await read();
      expect((await pd.get(ann, FS, task)).fields).toMatchObject({ accessToken: "tok" });
    });

    it("refuses writes without global.writeProcessData, changing nothing, and serves them with it (through a group too)", async () => {
      await identity.global.grant(SYSTEM, "global.readProcessData", "clerks");
      const before = await pd.list(SYSTEM, FS);
      for (const write of writes(bob)) expect(await refusal(write())).toBeInstanceOf(ForbiddenError);
      expect(await pd.list(SYSTEM, FS)).toEqual(before);
      expect((await pd.listStartForms(SYSTEM, "def")).items).toEqual([]);

      await identity.global.grant(SYSTEM, "global.writeProcessData", "clerks");
      for (const write of writes(bob)) await write();
      expect((await pd.listByProcessInstance(bob, "pi-1")).items).toEqual([]);
    });
  });
});
