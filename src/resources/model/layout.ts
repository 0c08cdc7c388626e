/**
 * The key layout of a resource partition: the ONLY code that names keys (FoundationDB's subspace idea:
 * each family is a prefix, and a resource's keys are that prefix plus its address). Everything else
 * asks the layout.
 *
 * Families (the first tuple item):
 *   s  state:          ["s", depth, ...pairs]                 → record (see record.ts)
 *   a  access:         ["a", depth, ...pairs]                 → {permissions, parent} JSON (kept out of lists)
 *   c  flat children:  ["c", depth, ...pairs]                 → index entry of a child in another partition
 *   o  ordering:       ["o", depth, ...pairs, childType]      → JSON array of child ids
 *   n  child count:    ["n", depth, ...pairs, childType]      → count of a `counted` flat child type (absent at 0)
 *   x  order index:    ["x", depth, ...pairs, childType, 0, i]            → id (the ordering's i-th id, a live child)
 *                      ["x", depth, ...pairs, childType, 1, ...sortKey]   → id (every other live child)
 *                      The effective order of an ordered collection (ordering.ts), kept by every write
 *                      that changes it; a page of it is one range read. sortKey: ordering.ts restSortKey.
 *   h  history index:  ["h", depth, ...pairs, seq]            → empty (the event is in the log)
 *   l  log:            ["l", seq]                             → event JSON, its hash last (hash chain: events.ts)
 *   m  meta:           ["m", "head"]                          → {seq, hash} of the chain
 *                      ["m", "parent"]                        → a flat owner's parent ref (outlives its state)
 *                      ["m", "restore"]                       → present while a partition dump is restored
 * The partition ["feed"] is the store-wide change feed (feed.ts): ["e", position] → {p, from, to} and
 * ["m", "head"] → {position}.
 * Beside the resource partitions, the partition ["sweeps"] records the pending sweeps of flat
 * descendants: key [...owner partition, depth, ...pairs] → {type, ids, actor}; the partition ["ledger"]
 * anchors each chain outside its partition: key [...owner partition] → {seq, hash} (writer.ts).
 * The partitions ["visible", identity] index the roots an identity may list (visibility.ts): key
 * [rootType, id] → the root's row (createdAt, status and its declared query fields). The partitions
 * ["assigned", identity] index what is assigned to an identity: key [type, ...ids] → empty.
 *
 * The depth (number of pairs) leads the key so that the direct children of a resource are one
 * contiguous range (`["s", d+1, ...parentPairs, childType]`) that never passes grandchildren, and the
 * whole nested subtree of a resource at depth d is one prefix per level: `["s", l, ...pairs]` for l > d.
 */
import type { Key, Partition } from "../../kv/contract.js";
import type { TupleItem } from "../../kv/tuple.js";
import type { Located } from "./ref.js";

/** The families a subtree delete clears level by level. */
type SubtreeFamily = "s" | "a" | "o" | "c" | "n" | "x";

export const layout = {
  head: ["m", "head"] as Key,
  parentLink: ["m", "parent"] as Key,
  restoreMarker: ["m", "restore"] as Key,
  /** The state of a partition's owner. */
  ownerState: ["s", 0] as Key,
  /** Every order index of a partition (its rebuild clears them all). */
  orderIndexes: ["x"] as Key,
  /** The access record of a partition's owner. */
  ownerAccess: ["a", 0] as Key,
  /** The whole log, oldest first. */
  logs: ["l"] as Key,
  /** Just past every log key (true sorts after every integer): the end of a scan of the log from a seq on. */
  afterLogs: ["l", true] as Key,
  sweeps: ["sweeps"] as Partition,
  ledger: ["ledger"] as Partition,
  /** A partition's entry in the ledger. */
  ledgerEntry: (partition: Partition): Key => [...partition],
  feed: ["feed"] as Partition,
  /** The roots an identity (a user or a group) may list, by type and id. */
  visible: (identity: string): Partition => ["visible", identity],
  visibleKind: "visible",
  visibleRoot: (type: string, id: string): Key => [type, id],
  visibleRoots: (type: string): Key => [type],
  /** Put by every commit to an identity's visible roots: its version tells a reader whether its cache is current. */
  visibleVersion: ["#"] as Key,
  /** The resources assigned to an identity (assignments.ts): key [type, ...ids] → empty. */
  assigned: (identity: string): Partition => ["assigned", identity],
  assignedKind: "assigned",
  assignedEntry: (type: string, ids: readonly string[]): Key => [type, ...ids],
  refOfAssigned: (key: Key): { type: string; ids: string[] } => ({ type: key[0] as string, ids: key.slice(1) as string[] }),
  /** Where the index of visible roots records that it was built for a root type (the marker partition holds no identity). */
  visibleBuilt: ["visible"] as Partition,
  visibleBuiltEntry: (type: string): Key => ["built", type],
  /** True for a partition of the index that holds an identity's entries (not the marker partition). */
  isIdentityVisible: (partition: Partition): boolean => partition.length === 2 && typeof partition[1] === "string",
  /** The identity a visibility partition indexes. */
  identityOfVisible: (partition: Partition): string => partition[1] as string,
  /** The root id a visibility key names. */
  idOfVisible: (key: Key): string => key[1] as string,
  feedEntry: (position: number): Key => ["e", position],
  /** Past every feed entry (an exclusive scan end). */
  feedEnd: ["f"] as Key,
  positionOfFeedEntry: (key: Key): number => key[1] as number,

  state: (l: Located): Key => ["s", l.depth, ...l.pairs],
  access: (l: Located): Key => ["a", l.depth, ...l.pairs],
  ordering: (l: Located, childType: string): Key => ["o", l.depth, ...l.pairs, childType],
  /** The count of a resource's flat children of one type (kept for a `parentDelete: "counted"` type only). */
  childCount: (l: Located, childType: string): Key => ["n", l.depth, ...l.pairs, childType],
  /** The order index of a parent's ordered children (one range, in effective order). */
  orderIndex: (l: Located, childType: string): Key => ["x", l.depth, ...l.pairs, childType],
  /** The part of the order index holding the children the stored ordering lists, by their place in it. */
  orderIndexListed: (l: Located, childType: string): Key => ["x", l.depth, ...l.pairs, childType, 0],
  orderIndexListedEntry: (l: Located, childType: string, i: number): Key => ["x", l.depth, ...l.pairs, childType, 0, i],
  /** A child the ordering does not list, under its sort key (ordering.ts restSortKey). */
  orderIndexRestEntry: (l: Located, childType: string, sortKey: readonly TupleItem[]): Key => ["x", l.depth, ...l.pairs, childType, 1, ...sortKey],
  history: (l: Located): Key => ["h", l.depth, ...l.pairs],
  historyEntry: (l: Located, seq: number): Key => ["h", l.depth, ...l.pairs, seq],
  log: (seq: number): Key => ["l", seq],
  /** Direct nested children of a given type. */
  children: (l: Located, childType: string): Key => ["s", l.depth + 1, ...l.pairs, childType],
  /** The state of one direct nested child. */
  child: (l: Located, childType: string, id: string): Key => ["s", l.depth + 1, ...l.pairs, childType, id],
  /** Index entries of flat children of a given type. */
  flatChildren: (l: Located, childType: string): Key => ["c", l.depth + 1, ...l.pairs, childType],
  flatChild: (l: Located, childType: string, id: string): Key => ["c", l.depth + 1, ...l.pairs, childType, id],
  /** Everything of a family below a resource at one depth (a subtree delete or sweep goes level by level). */
  below: (family: SubtreeFamily, l: Located, depth: number): Key => [family, depth, ...l.pairs],
  /** The sweep job of a resource's flat descendants, in the sweeps partition. */
  sweep: (l: Located): Key => [...l.partition, l.depth, ...l.pairs],

  /** The seq a history index entry points at. */
  seqOfHistory: (key: Key): number => key.at(-1) as number,
  /** The seq a log key is stored under. */
  seqOfLog: (key: Key): unknown => key[1],
  /** The child a flat index entry names. */
  flatChildOf: (key: Key): { childType: string; id: string } => ({ childType: key.at(-2) as string, id: key.at(-1) as string }),
  /**
   * True when a key is of one of the families above, shaped as they are (what a restore accepts; the
   * restore marker is no dump's content).
   */
  isKnown: (key: Key): boolean => {
    const [family, depth, ...rest] = key;
    if (family === "m") return key.length === 2 && (depth === "head" || depth === "parent");
    if (family === "l") return key.length === 2 && Number.isSafeInteger(depth) && (depth as number) > 0;
    if (!Number.isSafeInteger(depth) || (depth as number) < 0) return false;
    // After the depth: its (type, id) pairs, then the family's tail (a child type, a seq).
    if (family === "x") {
      // [...pairs, childType, 0, i] or [...pairs, childType, 1, ...sortKey]
      const d = depth as number;
      const tailX = rest.slice(2 * d + 1);
      const listed = tailX.length === 2 && tailX[0] === 0 && Number.isSafeInteger(tailX[1]) && (tailX[1] as number) >= 0;
      const other = tailX.length >= 2 && tailX[0] === 1;
      return (listed || other) && rest.slice(0, 2 * d + 1).every((x) => typeof x === "string");
    }
    const tail = { s: 0, a: 0, c: 0, o: 1, n: 1, h: 1 }[family as string];
    if (tail === undefined || rest.length !== 2 * (depth as number) + tail) return false;
    const strings = family === "h" ? rest.slice(0, -1) : rest;
    return strings.every((x) => typeof x === "string") && (family !== "h" || Number.isSafeInteger(rest.at(-1)));
  },
  /** The resource a state key of a partition holds (its owner's id, then the ids of its (type, id) pairs), or null when it is no state key. */
  refOfState: (partition: Partition, key: Key): { type: string; ids: string[] } | null =>
    key[0] !== "s"
      ? null
      : { type: key.length === 2 ? (partition[0] as string) : (key.at(-2) as string), ids: [partition[1] as string, ...key.slice(2).filter((_, i) => i % 2 === 1).map(String)] },
  /** The resource type a key of a partition holds the state of, or null when it is no state key. */
  stateTypeOf: (partition: Partition, key: Key): string | null =>
    key[0] !== "s" ? null : key.length === 2 ? (partition[0] as string) : (key.at(-2) as string),
} as const;
