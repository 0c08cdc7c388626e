/**
 * The key layout of the Redis backend. Everything a store writes starts with `<namespace>:`.
 *
 * Partition P (id = base64url of encodeNested(P), a string with no braces), hash tag `{p:<id>}`:
 *   <ns>:{p:<id>}:k   sorted set, score 0, members = encoded keys (raw tuple bytes)
 *   <ns>:{p:<id>}:v   hash, encoded key -> "<version>:<value bytes>"
 *   <ns>:{p:<id>}:m   hash, "s" -> commit sequence, "i" -> 1 once the partition is indexed
 * Partition index of kind K, bucket b in [0, INDEX_BUCKETS), hash tag `{i:<base64url K>:<b>}`:
 *   <ns>:{i:<kind>:<b>}  sorted set, score 0, members = encodeNested(P) of every partition of that kind
 *                        whose bucket is b (b = first byte of sha1(encodeNested(P)) mod INDEX_BUCKETS)
 * The bucket function and INDEX_BUCKETS are part of the stored format: changing them orphans index
 * entries.
 */
import { createHash } from "node:crypto";
import { ValidationError } from "../../errors.js";
import { encodeNested } from "../tuple.js";
import { encodePartition, type Partition } from "../contract.js";

export const INDEX_BUCKETS = 16;

export class PartitionKeys {
  /** encodeNested(partition): the member of the partition index. */
  readonly member: Buffer;
  readonly keys: string;
  readonly values: string;
  readonly meta: string;
  #index: string | undefined;

  constructor(
    readonly namespace: string,
    readonly partition: Partition,
    /** encodeNested(partition), when the caller has it already (validated by encodePartition). */
    member?: Buffer,
  ) {
    this.member = member ?? encodeNested(partition);
    const tag = `${namespace}:{p:${this.member.toString("base64url")}}`;
    this.keys = `${tag}:k`;
    this.values = `${tag}:v`;
    this.meta = `${tag}:m`;
  }

  /** The index bucket key (computed on demand: only commits that index and drops need it). */
  get index(): string {
    if (this.#index === undefined) {
      const bucket = createHash("sha1").update(this.member).digest()[0]! % INDEX_BUCKETS;
      this.#index = indexKey(this.namespace, this.partition[0] as string, bucket);
    }
    return this.#index;
  }
}

export function assertNamespace(namespace: string): void {
  if (typeof namespace !== "string" || !/^[A-Za-z0-9_.:-]{1,100}$/.test(namespace)) {
    throw new ValidationError("a redis namespace is 1-100 characters of letters, digits, '_', '.', ':' or '-'", "namespace");
  }
}

/** The keys of a partition; validates it (ValidationError on field "partition"). */
export function partitionKeys(namespace: string, partition: Partition): PartitionKeys {
  return new PartitionKeys(namespace, partition, encodePartition(partition));
}

export function indexKey(namespace: string, kind: string, bucket: number): string {
  return `${namespace}:{i:${Buffer.from(kind, "utf8").toString("base64url")}:${bucket}}`;
}
