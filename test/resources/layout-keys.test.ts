/**
 * The resource layout built on kv's Subspace (src/resources/model/layout.ts) stores the same bytes as the
 * tuple literals it replaced: for samples of every family and store-wide partition, the packed key
 * equals the tuple spelled by hand and encodes to the same bytes; the readers invert the builders.
 */
import { describe, expect, it } from "vitest";
import type { Tuple } from "../../src/kv/tuple.js";
import { encode } from "../../src/kv/tuple.js";
import { RESOURCE_KINDS } from "../../src/resources/model/kinds.js";
import { layout } from "../../src/resources/model/layout.js";
import type { Located } from "../../src/resources/model/ref.js";

const owner = { partition: ["project", "p1"], pairs: [], depth: 0 } as unknown as Located;
const nested = { partition: ["project", "p1"], pairs: ["subproject", "s1", "workflowitem", "w1"], depth: 2 } as unknown as Located;

function same(built: Tuple, literal: Tuple): void {
  expect(built).toEqual(literal);
  expect(encode(built)).toEqual(encode(literal));
}

describe("resource layout keys equal the literal tuples they replaced", () => {
  it("partition keys of every family", () => {
    same(layout.head, ["m", "head"]);
    same(layout.parentLink, ["m", "parent"]);
    same(layout.restoreMarker, ["m", "restore"]);
    same(layout.ownerState, ["s", 0]);
    same(layout.ownerAccess, ["a", 0]);
    same(layout.orderIndexes, ["x"]);
    same(layout.logs, ["l"]);
    same(layout.afterLogs, ["l", true]);
    same(layout.log(7), ["l", 7]);
    for (const l of [owner, nested]) {
      same(layout.state(l), ["s", l.depth, ...l.pairs]);
      same(layout.access(l), ["a", l.depth, ...l.pairs]);
      same(layout.ordering(l, "document"), ["o", l.depth, ...l.pairs, "document"]);
      same(layout.childCount(l, "document"), ["n", l.depth, ...l.pairs, "document"]);
      same(layout.orderIndex(l, "workflowitem"), ["x", l.depth, ...l.pairs, "workflowitem"]);
      same(layout.orderIndexListed(l, "workflowitem"), ["x", l.depth, ...l.pairs, "workflowitem", 0]);
      same(layout.orderIndexListedEntry(l, "workflowitem", 3), ["x", l.depth, ...l.pairs, "workflowitem", 0, 3]);
      same(layout.orderIndexRestEntry(l, "workflowitem", [false, 12, "w9"]), ["x", l.depth, ...l.pairs, "workflowitem", 1, false, 12, "w9"]);
      same(layout.history(l), ["h", l.depth, ...l.pairs]);
      same(layout.historyEntry(l, 5), ["h", l.depth, ...l.pairs, 5]);
      same(layout.children(l, "subproject"), ["s", l.depth + 1, ...l.pairs, "subproject"]);
      same(layout.child(l, "subproject", "s2"), ["s", l.depth + 1, ...l.pairs, "subproject", "s2"]);
      same(layout.flatChildren(l, "document"), ["c", l.depth + 1, ...l.pairs, "document"]);
      same(layout.flatChild(l, "document", "d1"), ["c", l.depth + 1, ...l.pairs, "document", "d1"]);
      for (const family of ["s", "a", "o", "c", "n", "x"] as const) same(layout.below(family, l, 4), [family, 4, ...l.pairs]);
      same(layout.sweep(l), [...l.partition, l.depth, ...l.pairs]);
    }
    expect(layout.seqOfHistory(layout.historyEntry(nested, 9))).toBe(9);
    expect(layout.flatChildOf(layout.flatChild(nested, "document", "d1"))).toEqual({ childType: "document", id: "d1" });
    expect(layout.refOfState(["project", "p1"], layout.child(nested, "subproject", "s2"))).toEqual({ type: "subproject", ids: ["p1", "s1", "w1", "s2"] });
    expect(layout.stateTypeOf(["project", "p1"], layout.ownerState)).toBe("project");
    expect(layout.stateTypeOf(["project", "p1"], layout.access(nested))).toBeNull();
  });

  it("store-wide partitions and their keys", () => {
    same(layout.sweeps, ["sweeps"]);
    same(layout.ledger, ["ledger"]);
    same(layout.ledgerEntry(["project", "p1"]), ["project", "p1"]);
    same(layout.feed, ["feed"]);
    same(layout.feedEntry(42), ["e", 42]);
    same(layout.feedEnd, ["f"]);
    expect(layout.positionOfFeedEntry(layout.feedEntry(42))).toBe(42);
    same(layout.visible("alice"), ["visible", "alice"]);
    same(layout.visibleBuilt, ["visible"]);
    same(layout.visibleBuiltEntry("project"), ["built", "project"]);
    same(layout.visibleRoot("project", "p1"), ["project", "p1"]);
    same(layout.visibleRoots("project"), ["project"]);
    same(layout.visibleVersion, ["#"]);
    expect(layout.identityOfVisible(layout.visible("alice"))).toBe("alice");
    expect(layout.idOfVisible(layout.visibleRoot("project", "p1"))).toBe("p1");
    same(layout.assigned("bob"), ["assigned", "bob"]);
    same(layout.assignedEntry("workflowitem", ["p1", "s1", "w1"]), ["workflowitem", "p1", "s1", "w1"]);
    expect(layout.refOfAssigned(layout.assignedEntry("workflowitem", ["p1", "s1", "w1"]))).toEqual({ type: "workflowitem", ids: ["p1", "s1", "w1"] });
    expect(layout.visibleKind).toBe("visible");
    expect(layout.assignedKind).toBe("assigned");
    same(layout.subject("anna"), ["subject", "anna"]);
    same(layout.subjectKey, ["key"]);
    same(layout.subjectErasure, ["erasure"]);
    same(layout.subjectRef("workflowitem", ["p1", "s1", "w1"]), ["ref", "workflowitem", "p1", "s1", "w1"]);
    expect(layout.refOfSubjectRef(layout.subjectRef("workflowitem", ["p1", "s1", "w1"]))).toEqual({ type: "workflowitem", ids: ["p1", "s1", "w1"] });
    expect(RESOURCE_KINDS).toEqual(["global", "sweeps", "ledger", "feed", "visible", "assigned", "subject"]);
  });
});
