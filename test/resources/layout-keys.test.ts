/**
 * The resource layout built on kv's Subspace (src/resources/model/layout.ts) stores the same bytes as the
 * tuple literals it replaced: for samples of every family and store-wide partition, the packed key
 * equals the tuple spelled by hand and encodes to the same bytes; the readers invert the builders.
 */
import { describe, expect, it } from "vitest";
import type { Tuple } from "../../src/kv/tuple.js";
import { encode, encodeLatin1 } from "../../src/kv/tuple.js";
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
    same(layout.allSums, ["g"]);
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
      for (const family of ["s", "a", "o", "c", "n", "x", "g"] as const) same(layout.below(family, l, 4), [family, 4, ...l.pairs]);
      same(layout.sums(l), ["g", l.depth, ...l.pairs]);
      same(layout.sumEntry(l.depth, l.pairs, ["allocated", "closed", "EUR", "2025-01-02"]), ["g", l.depth, ...l.pairs, "allocated", "closed", "EUR", "2025-01-02"]);
      expect(layout.bucketOfSum(layout.sumEntry(l.depth, l.pairs, ["a", "b"]), l.depth)).toEqual(["a", "b"]);
      expect(layout.pairsOfSum(layout.sumEntry(l.depth, l.pairs, ["a", "b"]), l.depth)).toEqual(l.pairs);
      expect(layout.isKnown(layout.sumEntry(l.depth, l.pairs, ["a"]))).toBe(true);
      expect(layout.isKnown(layout.sums(l))).toBe(false);
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

    same(layout.sumsBuilt, ["sums"]);
    same(layout.sumsBuiltEntry("project"), ["built", "project"]);
    expect(RESOURCE_KINDS).toEqual(["global", "sweeps", "ledger", "feed", "visible", "assigned", "subject", "sums"]);
  });
});

describe("keys named from an encoded address (what a replay of a partition names its keys by)", () => {
  it("are the latin1 encodings of the keys the builders give", () => {
    for (const l of [owner, nested, { ...nested, pairs: ["subproject", "s\u00e9\u0000x"], depth: 1 } as unknown as Located]) {
      const at = layout.address(l);
      expect(layout.stateAt(at)).toBe(encodeLatin1(layout.state(l)));
      expect(layout.accessAt(at)).toBe(encodeLatin1(layout.access(l)));
      for (const seq of [1, 255, 256, 70_000, 2 ** 40]) expect(layout.historyEntryAt(at, seq)).toBe(encodeLatin1(layout.historyEntry(l, seq)));
      const sortKey = [1_795_852_214_081, Buffer.from([0, 0x77, 0, 0])];
      expect(layout.orderIndexRestEntryAt(at, "workflowitem", sortKey)).toBe(encodeLatin1(layout.orderIndexRestEntry(l, "workflowitem", sortKey)));
    }
  });

  it("tell a history entry's encoded key by its family, whatever follows", () => {
    expect(layout.isHistoryBytes(encode(layout.historyEntry(nested, 3)))).toBe(true);
    expect(layout.isHistoryBytes(encode(layout.state(nested)))).toBe(false);
    expect(layout.isHistoryBytes(encode(["h"]).subarray(0, 1))).toBe(false);
    expect(layout.isHistoryBytes(Buffer.alloc(0))).toBe(false);
  });
});
