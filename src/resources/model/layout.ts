/**
 * The key layout of a resource partition: the ONLY code that names keys, built on kv's Subspace
 * (FoundationDB's subspace idea: each family is one Subspace, declared once below, and a resource's keys
 * are its prefix plus the resource's address; see docs/architecture.md). The store-wide partitions are
 * PartitionKind constants (`kinds`). Everything else asks the layout.
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
 *   g  sums:           ["g", depth, ...pairs, ...bucket]      → {sum, n} of its nested children's declared sums
 *                      in one bucket (sums.ts; absent at n = 0)
 *   h  history index:  ["h", depth, ...pairs, seq]            → the event's bytes, as in the log (a history page
 *                      is one range read); empty in stores written before (the event is then read from the log)
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
 * ["assigned", identity] index what is assigned to an identity: key [type, ...ids] → empty. The
 * partition ["sums"] records ["built", ownerType] once a store's partitions of that type have their sums.
 *
 * The depth (number of pairs) leads the key so that the direct children of a resource are one
 * contiguous range (`["s", d+1, ...parentPairs, childType]`) that never passes grandchildren, and the
 * whole nested subtree of a resource at depth d is one prefix per level: `["s", l, ...pairs]` for l > d.
 */
import type { Key, Partition } from "../../kv/contract.js";
import { keyFamilies, PartitionKind, Subspace } from "../../kv/subspace.js";
import { decode, encode, encodeLatin1, type TupleItem } from "../../kv/tuple.js";
import { SUBJECT_KIND, subjectLayout } from "../../personal/subjects.js";
import type { Located } from "./ref.js";

/** The store-wide partition kinds of the resources layer (beside each schema's owner types), each declared once. */
export const kinds = {
  sweeps: new PartitionKind("sweeps"),
  ledger: new PartitionKind("ledger"),
  feed: new PartitionKind("feed"),
  visible: new PartitionKind("visible"),
  assigned: new PartitionKind("assigned"),
  /** A data subject's personal-data key, the holders of data sealed under it, and its erasure (src/personal/subjects.ts declares it). */
  subject: SUBJECT_KIND,
  sums: new PartitionKind("sums"),
} as const;

/** The key families of a resource partition (the first tuple item), one Subspace each. */
export const families = keyFamilies(["s", "a", "c", "o", "n", "x", "g", "h", "l", "m"]);
const { s: S, a: A, c: C, o: O, n: N, x: X, g: G, h: H, l: L, m: M } = families;
const H_BYTES = H.bytes();
/** Each family's encoded prefix as latin1 (a key's encoding is its prefix's followed by its items'). */
const S_LATIN1 = S.bytes().toString("latin1");
const A_LATIN1 = A.bytes().toString("latin1");
const H_LATIN1 = H_BYTES.toString("latin1");
const X_LATIN1 = X.bytes().toString("latin1");
/** The feed partition's families: its entries and (past them) the end of a scan. */
const FEED_ENTRY = new Subspace(["e"]);
const FEED_END = new Subspace(["f"]);
/** The marker partition of the visible-roots index: the root types it was built for. */
const BUILT = new Subspace(["built"]);
/** Put by every commit to an identity's visible roots (a key no root type can take). */
const VISIBLE_VERSION = new Subspace(["#"]);
/** Keys with no family prefix: a ledger entry, a sweep job, a visible root, an assignment. */
const BARE = new Subspace();

/** The families a subtree delete clears level by level. */
type SubtreeFamily = "s" | "a" | "o" | "c" | "n" | "x" | "g";

export const layout = {
  head: M.pack(["head"]),
  parentLink: M.pack(["parent"]),
  restoreMarker: M.pack(["restore"]),
  /** The state of a partition's owner. */
  ownerState: S.pack([0]),
  /** Every parent's sums in a partition (their rebuild clears them all). */
  allSums: G.pack(),
  /** The marker partition recording the owner types whose partitions were given their sums (order-index.ts buildSums). */
  sumsBuilt: kinds.sums.partition(),
  sumsBuiltEntry: (ownerType: string): Key => BUILT.pack([ownerType]),
  /** Every order index of a partition (its rebuild clears them all). */
  orderIndexes: X.pack(),
  /** The access record of a partition's owner. */
  ownerAccess: A.pack([0]),
  /** The whole log, oldest first. */
  logs: L.pack(),
  /** Just past every log key (true sorts after every integer): the end of a scan of the log from a seq on. */
  afterLogs: L.pack([true]),
  sweeps: kinds.sweeps.partition(),
  ledger: kinds.ledger.partition(),
  /** A partition's entry in the ledger. */
  ledgerEntry: (partition: Partition): Key => BARE.pack(partition),
  feed: kinds.feed.partition(),
  /** The roots an identity (a user or a group) may list, by type and id. */
  visible: (identity: string): Partition => kinds.visible.partition(identity),
  visibleKind: kinds.visible.kind,
  visibleRoot: (type: string, id: string): Key => BARE.pack([type, id]),
  visibleRoots: (type: string): Key => BARE.pack([type]),
  /** Put by every commit to an identity's visible roots: its version tells a reader whether its cache is current. */
  visibleVersion: VISIBLE_VERSION.pack(),
  /** The resources assigned to an identity (assignments.ts): key [type, ...ids] → empty. */
  assigned: (identity: string): Partition => kinds.assigned.partition(identity),
  assignedKind: kinds.assigned.kind,
  assignedEntry: (type: string, ids: readonly string[]): Key => BARE.pack([type, ...ids]),
  refOfAssigned: (key: Key): { type: string; ids: string[] } => {
    const [type, ...ids] = BARE.unpack(key);
    return { type: type as string, ids: ids as string[] };
  },
  /** Where the index of visible roots records that it was built for a root type (the marker partition holds no identity). */
  visibleBuilt: kinds.visible.partition(),
  visibleBuiltEntry: (type: string): Key => BUILT.pack([type]),
  /** True for a partition of the index that holds an identity's entries (not the marker partition). */
  isIdentityVisible: (partition: Partition): boolean => partition.length === 2 && typeof partition[1] === "string",
  /** The identity a visibility partition indexes. */
  identityOfVisible: (partition: Partition): string => kinds.visible.unpack(partition)[0] as string,
  /** The root id a visibility key names. */
  idOfVisible: (key: Key): string => BARE.unpack(key)[1] as string,
  /** A data subject's partition (personal/subjects.ts): its key, the resources holding its sealed data, its erasure. */
  subject: subjectLayout.partition,
  subjectKey: subjectLayout.key,
  subjectErasure: subjectLayout.erasure,
  subjectRefs: subjectLayout.refs,
  subjectRef: subjectLayout.ref,
  refOfSubjectRef: subjectLayout.refOf,
  feedEntry: (position: number): Key => FEED_ENTRY.pack([position]),
  /** Past every feed entry (an exclusive scan end). */
  feedEnd: FEED_END.pack(),
  positionOfFeedEntry: (key: Key): number => FEED_ENTRY.unpack(key)[0] as number,

  state: (l: Located): Key => S.pack([l.depth, ...l.pairs]),
  access: (l: Located): Key => A.pack([l.depth, ...l.pairs]),
  ordering: (l: Located, childType: string): Key => O.pack([l.depth, ...l.pairs, childType]),
  /** The count of a resource's flat children of one type (kept for a `parentDelete: "counted"` type only). */
  childCount: (l: Located, childType: string): Key => N.pack([l.depth, ...l.pairs, childType]),
  /** The order index of a parent's ordered children (one range, in effective order). */
  orderIndex: (l: Located, childType: string): Key => X.pack([l.depth, ...l.pairs, childType]),
  /** The part of the order index holding the children the stored ordering lists, by their place in it. */
  orderIndexListed: (l: Located, childType: string): Key => X.pack([l.depth, ...l.pairs, childType, 0]),
  orderIndexListedEntry: (l: Located, childType: string, i: number): Key => X.pack([l.depth, ...l.pairs, childType, 0, i]),
  /** A child the ordering does not list, under its sort key (ordering.ts restSortKey). */
  orderIndexRestEntry: (l: Located, childType: string, sortKey: readonly TupleItem[]): Key => X.pack([l.depth, ...l.pairs, childType, 1, ...sortKey]),
  /** A parent's sums of its children's declared amounts (sums.ts), every bucket: one range. */
  sums: (l: Located): Key => G.pack([l.depth, ...l.pairs]),
  /** One bucket of the sums of the resource at `depth` with `pairs` (the replay names a parent so). */
  sumEntry: (depth: number, pairs: readonly string[], bucket: readonly string[]): Key => G.pack([depth, ...pairs, ...bucket]),
  /** The sums of every resource of one type at one depth below the owner (their ids in key order), one range. */
  sumsOfType: (depth: number, pairsBefore: readonly string[], type: string): Key => G.pack([depth, ...pairsBefore, type]),
  /** The bucket of a sums key of a resource at `depth`. */
  bucketOfSum: (key: Key, depth: number): string[] => G.unpack(key).slice(1 + 2 * depth) as string[],
  /** The (type, id) pairs of a sums key of a resource at `depth`. */
  pairsOfSum: (key: Key, depth: number): string[] => G.unpack(key).slice(1, 1 + 2 * depth) as string[],
  history: (l: Located): Key => H.pack([l.depth, ...l.pairs]),
  historyEntry: (l: Located, seq: number): Key => H.pack([l.depth, ...l.pairs, seq]),
  log: (seq: number): Key => L.pack([seq]),
  /** Direct nested children of a given type. */
  children: (l: Located, childType: string): Key => S.pack([l.depth + 1, ...l.pairs, childType]),
  /** The access entries of the direct nested children of a given type (their ids in the order of `children`): one range. */
  childrenAccess: (l: Located, childType: string): Key => A.pack([l.depth + 1, ...l.pairs, childType]),
  /** The state of one direct nested child. */
  child: (l: Located, childType: string, id: string): Key => S.pack([l.depth + 1, ...l.pairs, childType, id]),
  /** Index entries of flat children of a given type. */
  flatChildren: (l: Located, childType: string): Key => C.pack([l.depth + 1, ...l.pairs, childType]),
  flatChild: (l: Located, childType: string, id: string): Key => C.pack([l.depth + 1, ...l.pairs, childType, id]),
  /** Everything of a family below a resource at one depth (a subtree delete or sweep goes level by level). */
  below: (family: SubtreeFamily, l: Located, depth: number): Key => families[family].pack([depth, ...l.pairs]),
  /** The sweep job of a resource's flat descendants, in the sweeps partition. */
  sweep: (l: Located): Key => BARE.pack([...l.partition, l.depth, ...l.pairs]),

  /**
   * A resource's address ([depth, ...pairs], the items its keys share after their family) encoded once as
   * latin1: with it, `stateAt`, `accessAt`, `historyEntryAt` and `orderIndexRestEntryAt` give the encodings
   * (latin1) of `state(l)`, `access(l)`, `historyEntry(l, seq)` and `orderIndexRestEntry(l, …)` by joining
   * strings, with no tuple encoded per key (a replay of a whole partition names ~5 keys per event).
   */
  address: (l: Located): string => encodeLatin1([l.depth, ...l.pairs]),
  stateAt: (address: string): string => S_LATIN1 + address,
  accessAt: (address: string): string => A_LATIN1 + address,
  historyEntryAt: (address: string, seq: number): string => H_LATIN1 + address + encodeLatin1([seq]),
  orderIndexRestEntryAt: (address: string, childType: string, sortKey: readonly TupleItem[]): string => X_LATIN1 + address + encodeLatin1([childType, 1, ...sortKey]),

  /** True when an encoded key (a scan's `keyBytes`) is a history index entry's. */
  isHistoryBytes: (keyBytes: Buffer): boolean => {
    if (keyBytes.length < H_BYTES.length) return false;
    for (let i = 0; i < H_BYTES.length; i++) if (keyBytes[i] !== H_BYTES[i]) return false;
    return true;
  },
  /** The seq a history index entry points at. */
  seqOfHistory: (key: Key): number => key.at(-1) as number,
  /**
   * The seq of a history index entry of `l` from its encoded key (a scan's `keyBytes`): the bytes after
   * the encoded history prefix are the seq's alone (a prefix tuple's encoding is a byte prefix), so a
   * history read decodes one integer per event instead of the whole key with its ids.
   */
  seqOfHistoryBytes: (l: Located): ((keyBytes: Buffer) => number) => {
    const prefix = encode(H.pack([l.depth, ...l.pairs])).length;
    return (keyBytes) => decode(keyBytes.subarray(prefix))[0] as number;
  },
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
    if (family === "g") return rest.length > 2 * (depth as number) && rest.every((x) => typeof x === "string");
    const tail = { s: 0, a: 0, c: 0, o: 1, n: 1, h: 1 }[family as string];
    if (tail === undefined || rest.length !== 2 * (depth as number) + tail) return false;
    const strings = family === "h" ? rest.slice(0, -1) : rest;
    return strings.every((x) => typeof x === "string") && (family !== "h" || Number.isSafeInteger(rest.at(-1)));
  },
  /** The resource a state key of a partition holds (its owner's id, then the ids of its (type, id) pairs), or null when it is no state key. */
  refOfState: (partition: Partition, key: Key): { type: string; ids: string[] } | null =>
    !S.contains(key)
      ? null
      : {
          type: key.length === 2 ? (partition[0] as string) : (key.at(-2) as string),
          ids: [
            partition[1] as string,
            ...key
              .slice(2)
              .filter((_, i) => i % 2 === 1)
              .map(String),
          ],
        },
  /** The resource type a key of a partition holds the state of, or null when it is no state key. */
  stateTypeOf: (partition: Partition, key: Key): string | null => (!S.contains(key) ? null : key.length === 2 ? (partition[0] as string) : (key.at(-2) as string)),
} as const;
