/**
 * Field-level diffs (resources/model/diff.ts), as properties:
 * - applying a diff's changes to the data before gives the data after (JSON Pointer paths, old/new,
 *   absent members), and a diff is empty exactly when the two are equal;
 * - a keyed array (a type's `keyedArrays`) is matched by key: the order of its elements is no change;
 * - through a real store (workflow schema, memory backend), the changes every event carries equal those
 *   a replay of the resource's history renders for the same events stripped of them (what `?diff=true`
 *   serves for events written before diffs were recorded), over random sequences of updates, additional
 *   data merges and projected budget commands.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore } from "../../src/compose/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { diffData, renderChanges, type FieldChange } from "../../src/resources/model/diff.js";
import type { ResourceEvent } from "../../src/resources/model/events.js";
import { workflowSchema } from "../../src/workflow/schema.js";

const unescape = (step: string) => step.replaceAll("~1", "/").replaceAll("~0", "~");

/** Applies changes (JSON Pointer paths) to a copy of `data`, in order; array removals from the highest index down. */
function apply(data: Record<string, unknown>, changes: readonly FieldChange[]): Record<string, unknown> {
  const out = structuredClone(data);
  const removals: { parent: unknown[]; index: number }[] = [];
  for (const c of changes) {
    const steps = c.path.split("/").slice(1).map(unescape);
    let at: any = out;
    for (const s of steps.slice(0, -1)) at = at[Array.isArray(at) ? Number(s) : s];
    const last = steps.at(-1)!;
    if ("new" in c) at[Array.isArray(at) ? Number(last) : last] = structuredClone(c.new);
    else if (Array.isArray(at)) removals.push({ parent: at, index: Number(last) });
    else delete at[last];
  }
  removals.sort((a, b) => b.index - a.index).forEach((r) => r.parent.splice(r.index, 1));
  return out;
}

const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: 3 }), fc.boolean(), fc.constant(null), tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 3 }),
  object: fc.dictionary(fc.constantFrom("a", "b", "c/d", "e~f"), tie("value"), { maxKeys: 3, noNullPrototype: true }),
})).object as fc.Arbitrary<Record<string, unknown>>;

describe("diffData", () => {
  it("applying the changes to the data before gives the data after; no change exactly when equal", () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        const changes = diffData(before, after);
        expect(apply(before, changes)).toEqual(after);
        expect(changes.length === 0).toBe(isDeepStrictEqual(before, after));
        expect(diffData(before, structuredClone(before))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("a keyed array: a permutation is no change; a changed element is named by its key", () => {
    const budget = fc.record({ organization: fc.constantFrom("A", "B", "C"), currencyCode: fc.constantFrom("EUR", "USD"), value: fc.constantFrom("1", "2") });
    fc.assert(
      fc.property(fc.uniqueArray(budget, { selector: (b) => `${b.organization} ${b.currencyCode}`, maxLength: 6 }), fc.nat(), (budgets, seed) => {
        const shuffled = [...budgets].sort((x, y) => ((x.organization.charCodeAt(0) * 7 + seed) % 5) - ((y.organization.charCodeAt(0) * 7 + seed) % 5));
        const keys = { projectedBudgets: ["organization", "currencyCode"] };
        expect(diffData({ projectedBudgets: budgets }, { projectedBudgets: shuffled }, keys)).toEqual([]);
        if (budgets.length === 0) return;
        const changed = shuffled.map((b, i) => (i === 0 ? { ...b, value: b.value === "1" ? "2" : "1" } : b));
        expect(diffData({ projectedBudgets: budgets }, { projectedBudgets: changed }, keys)).toEqual([
          {
            path: "/projectedBudgets/0/value",
            old: shuffled[0]!.value,
            new: changed[0]!.value,
            key: { organization: shuffled[0]!.organization, currencyCode: shuffled[0]!.currencyCode },
          },
        ]);
      }),
      { numRuns: 500 },
    );
  });
});

type Op =
  | { kind: "update"; description?: string; additionalData?: Record<string, string | null> }
  | { kind: "budget"; organization: string; currencyCode: string; value: string }
  | { kind: "unbudget"; organization: string; currencyCode: string };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record(
    {
      kind: fc.constant("update" as const),
      description: fc.constantFrom("x", "y", "z"),
      additionalData: fc.dictionary(fc.constantFrom("k1", "k2", "k/3"), fc.option(fc.constantFrom("u", "v"), { nil: null }), { maxKeys: 2 }),
    },
    { requiredKeys: ["kind"] },
  ),
  fc.record({
    kind: fc.constant("budget" as const),
    organization: fc.constantFrom("A", "B"),
    currencyCode: fc.constantFrom("EUR", "USD"),
    value: fc.constantFrom("1", "20", "300"),
  }),
  fc.record({ kind: fc.constant("unbudget" as const), organization: fc.constantFrom("A", "B"), currencyCode: fc.constantFrom("EUR", "USD") }),
);

describe("through the store", () => {
  it("the changes each event carries equal those rendered from a replay of its history", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const fs = await openFlowstore(new MemoryKv());
        try {
          const id = `p${n++}`;
          const ref = { type: "project" as const, ids: [id] };
          await fs.workflow.createProject(SYSTEM, { id, displayName: "P" });
          for (const o of ops) {
            if (o.kind === "update") await fs.workflow.update(SYSTEM, ref, { description: o.description, additionalData: o.additionalData });
            else if (o.kind === "budget") await fs.workflow.setProjectedBudget(SYSTEM, ref, { organization: o.organization, currencyCode: o.currencyCode, value: o.value });
            else await fs.workflow.deleteProjectedBudget(SYSTEM, ref, o.organization, o.currencyCode).catch(() => undefined); // none to delete: refused, nothing written
          }
          const history = (await fs.workflow.history(SYSTEM, ref, { limit: 1000 })).items;
          const stripped: ResourceEvent[] = history.map(({ payload: { changes: _, ...payload }, ...e }) => ({ ...e, payload }));
          const rendered = renderChanges(stripped, workflowSchema.type("project").decl.keyedArrays);
          const changed = history.filter((e) => e.type !== "project.created");
          for (const e of changed) expect(rendered.get(e.seq), e.type).toEqual(e.payload.changes);
        } finally {
          await fs.close();
        }
      }),
      { numRuns: 60 },
    );
  });
});
