/**
 * Subspaces (FoundationDB's subspace idea over the tuple codec in tuple.ts): a subspace is a tuple
 * prefix, and every key of a family is that prefix followed by the family's own items. Every layout
 * (resources/layout.ts, identity, process data, the archive, the notifications) builds its keys and
 * partitions through one of these instead of spelling tuples by hand, so a key family is declared once
 * (its prefix) and reading a key back (`unpack`) is the inverse of building it (`pack`).
 *
 * Keys stay tuples (the storage contract takes tuples): `pack` returns the prefix and the items as one
 * tuple, so the stored bytes are exactly those of the same tuple spelled by hand.
 */
import { encode, isTuplePrefix, prefixRange, type Tuple, type TupleItem } from "./tuple.js";

export class Subspace {
  /** The prefix every key of this subspace begins with. */
  readonly prefix: Tuple;

  constructor(prefix: Tuple = []) {
    this.prefix = Object.freeze([...prefix]);
  }

  /** The key of `items` in this subspace: the prefix, then the items. */
  pack(items: Tuple = []): TupleItem[] {
    return [...this.prefix, ...items];
  }

  /** The items of a key of this subspace after its prefix (the inverse of `pack`); throws for a key outside it. */
  unpack(key: Tuple): TupleItem[] {
    if (!this.contains(key)) throw new RangeError("the key is not in this subspace");
    return key.slice(this.prefix.length);
  }

  /** True when `key` is in this subspace (the prefix itself included). */
  contains(key: Tuple): boolean {
    return isTuplePrefix(this.prefix, key);
  }

  /** The subspace of `items` nested in this one. */
  sub(...items: Tuple): Subspace {
    return new Subspace(this.pack(items));
  }

  /** The encoded prefix. */
  bytes(): Buffer {
    return encode(this.prefix);
  }

  /**
   * The byte range [start, end) holding exactly the encodings of this subspace's keys (of the subspace of
   * `items` within it, when given): a key is in it exactly when `contains` holds.
   */
  range(items: Tuple = []): { start: Buffer; end: Buffer } {
    return prefixRange(this.pack(items));
  }
}

/**
 * A family of partitions: its kind (the first item of every partition of it) and its subspace. A
 * layer declares each kind it writes once, as one of these; the registry of kinds gathers their names.
 */
export class PartitionKind extends Subspace {
  constructor(readonly kind: string) {
    super([kind]);
  }

  /** The partition of this kind named by `items` (`["project", "p1"]` for kind "project" and ["p1"]). */
  partition(...items: Tuple): TupleItem[] {
    return this.pack(items);
  }

  /** True when `partition` is of this kind. */
  holds(partition: Tuple): boolean {
    return partition[0] === this.kind;
  }
}

/** One Subspace per name, each prefixed by its own name: a layout's key families, each named once. */
export function keyFamilies<const N extends string>(names: readonly N[]): { readonly [K in N]: Subspace } {
  return Object.freeze(Object.fromEntries(names.map((n) => [n, new Subspace([n])]))) as { readonly [K in N]: Subspace };
}
