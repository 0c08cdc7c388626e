/**
 * A create's decided fields (writes.ts CreateDecision `set`: a default the parent decides, inside the
 * write): set on the given data, which was validated before the write and is not validated again; each
 * decided field is held to its declaration and the whole to the type's rules, so what is stored is as
 * validated as before, and a bad decision refuses the create, naming the field, with nothing written.
 */
import { Type } from "@sinclair/typebox";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ValidationError } from "../../src/errors.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { defineSchema } from "../../src/resources/model/schema.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { alice, storeWithRoot, type testSchema } from "./fixture.js";

const list = { type: "list", ids: ["f1", "l"] } as const;
let kv: MemoryKv;
let store: ResourceStore<typeof testSchema.decl>;

beforeEach(async () => {
  kv = new MemoryKv();
  ({ store } = await storeWithRoot(kv));
  await store.writes.create(alice, "list", { type: "folder", ids: ["f1"] }, { title: "L" }, { id: "l" });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await kv.close();
});

it("a decided field is set on the given data (its place, as a spread's) and the type's schema checks the data once", async () => {
  const check = vi.spyOn(store.schema.type("item").check, "Check");
  const created = await store.writes.create(
    alice,
    "item",
    list,
    { title: "T", status: "open", note: "given" },
    { id: "i", decide: () => ({ set: { amount: "12.5", note: "decided" } }) },
  );
  expect(check).toHaveBeenCalledTimes(1);
  expect(JSON.stringify(created.data)).toBe(JSON.stringify({ title: "T", status: "open", note: "decided", amount: "12.5" }));
  const read = await store.reads.get(alice, { type: "item", ids: ["f1", "l", "i"] });
  expect(JSON.stringify(read.data)).toBe(JSON.stringify(created.data));
});

it("a decided field that fails its declaration, is not declared, is a required one left undefined, or breaks the rules refuses the create, naming the field, with nothing written", async () => {
  const before = await kv.scan(["folder", "f1"], { limit: 10_000 });
  const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
    [{ title: "T", status: "open" }, { amount: "twelve" }, "data.amount"],
    [{ title: "T", status: "open" }, { title: "" }, "data.title"],
    [{ title: "T", status: "open" }, { bogus: 1 }, "data.bogus"],
    [{ title: "T", status: "open" }, { title: undefined }, "data.title"],
    [{ title: "T", status: "closed" }, { note: "forbidden" }, "data.note"],
  ];
  for (const [given, set, field] of cases) {
    const err = await store.writes.create(alice, "item", list, given as never, { id: "i", decide: () => ({ set }) }).catch((e: unknown) => e);
    expect(err, JSON.stringify(set)).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field, JSON.stringify(set)).toBe(field);
  }
  expect(await kv.scan(["folder", "f1"], { limit: 10_000 })).toEqual(before);
  // an optional field may be decided undefined, as the object's check lets it be
  const created = await store.writes.create(alice, "item", list, { title: "T", status: "open", note: "n" }, { id: "i", decide: () => ({ set: { note: undefined } }) });
  expect(created.data).toEqual({ title: "T", status: "open" });
});

it("a workflowitem create checks its data against the schema once and stores the subproject's type", async () => {
  const mem = new MemoryKv();
  try {
    const wf = new Workflow(new ResourceStore(mem, workflowSchema));
    const mary = userActor("mary");
    await wf.store.global.grant(SYSTEM, "global.createProject", "mary");
    await wf.createProject(mary, { id: "p", displayName: "P" });
    await wf.createSubproject(mary, "p", { id: "r", displayName: "R", currency: "EUR", workflowitemType: "restricted" });
    const check = vi.spyOn(wf.store.schema.type("workflowitem").check, "Check");
    const w = await wf.createWorkflowitem(mary, "p", "r", { id: "w", displayName: "W", amountType: "N/A" });
    expect(check).toHaveBeenCalledTimes(1);
    expect(w.data.workflowitemType).toBe("restricted");
    const stored = await wf.store.reads.get(mary, { ...workflowitemRef("p", "r", "w"), type: "workflowitem" });
    expect(Object.keys(stored.data)).toEqual(["displayName", "amountType", "assignee", "status", "workflowitemType"]);
  } finally {
    await mem.close();
  }
});

it("validateSet agrees with validate on the set result, for fields judged whole or one by one", () => {
  const Opt = Type.Optional(Type.String());
  const scratch = defineSchema({
    capped: { parent: null, idStyle: "flat", fields: Type.Object({ a: Opt, b: Opt }, { additionalProperties: false, maxProperties: 1 }) },
    open: { parent: null, idStyle: "flat", fields: Type.Object({ a: Opt }) },
    numbered: { parent: null, idStyle: "flat", fields: Type.Object({ a: Opt }, { additionalProperties: Type.Number() }) },
    patterned: { parent: null, idStyle: "flat", fields: Type.Object({ a: Opt }, { additionalProperties: false, patternProperties: { "^x_": Type.Number() } }) },
    closed: { parent: null, idStyle: "flat", fields: Type.Object({ u: Type.Unknown(), t: Type.String({ minLength: 1 }), o: Opt }, { additionalProperties: false }) },
  });
  const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ["capped", { a: "x" }, { b: "y" }],
    ["capped", {}, { b: "y" }],
    ["open", {}, { extra: "anything" }],
    ["numbered", {}, { extra: 1 }],
    ["numbered", {}, { extra: "one" }],
    ["patterned", {}, { x_n: 1 }],
    ["patterned", {}, { x_n: "one" }],
    ["patterned", {}, { y_n: 1 }],
    ["closed", { u: 1, t: "T" }, { u: undefined }],
    ["closed", { u: 1, t: "T" }, { t: undefined }],
    ["closed", { u: 1, t: "T" }, { o: undefined }],
    ["closed", { u: 1, t: "T" }, { t: "" }],
    ["closed", { u: 1, t: "T" }, { bogus: 1 }],
  ];
  const outcome = (f: () => Record<string, unknown>) => {
    try {
      return { ok: JSON.stringify(f()) };
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      return { field: e.field };
    }
  };
  for (const [name, data, set] of cases) {
    const t = scratch.type(name);
    expect(scratch.validate(t, data)).toBe(data);
    const full = outcome(() => scratch.validate(t, { ...data, ...set }));
    expect(
      outcome(() => scratch.validateSet(t, data, set)),
      `${name} ${JSON.stringify(set)}`,
    ).toEqual(full);
  }
  // the cases do both: accept and refuse
  expect(cases.filter(([n, d, s]) => "ok" in outcome(() => scratch.validateSet(scratch.type(n), d, s))).length).toBe(5);
});

it("a decide that returns `data` (CreateDecision's former field, now `set`) fails the create with a TypeError naming the change, with nothing written", async () => {
  const before = await kv.scan(["folder", "f1"], { limit: 10_000 });
  const decide = () => ({ data: { title: "T", status: "open", note: "decided" } }) as never;
  const err = await store.writes.create(alice, "item", list, { title: "T", status: "open" }, { id: "i", decide }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TypeError);
  expect((err as Error).message).toMatch(/`set`/);
  expect(await kv.scan(["folder", "f1"], { limit: 10_000 })).toEqual(before);
});
