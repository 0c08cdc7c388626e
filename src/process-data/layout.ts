/**
 * The key layout of process data: the only code of this folder that names partitions and keys, built on
 * kv's Subspace (see docs/architecture.md). Partitions, one kind each:
 *
 *   ["pd-instance", processInstanceId]   the records a process instance owns: key [recordKey] → record
 *   ["pd-keyspace:<keyspace>", bucket]   the other records of a keyspace, and a pointer to each owned one,
 *                                        by bucket (keys.ts bucketOf): key [recordKey] → record or pointer
 *   ["pd-expiry", hourStart]             the expiry index (expiry.ts): key [expiresAt, keyspace, recordKey] → empty
 *   ["pd-key"]                           the id of the key access tokens are sealed with: key ["sealed-with"]
 */
import type { Key, Partition } from "../kv/contract.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";
import { KEYSPACES, type Keyspace } from "./keys.js";

const INSTANCE = new PartitionKind("pd-instance");
const EXPIRY = new PartitionKind("pd-expiry");
const SEALING_KEY = new PartitionKind("pd-key");
const BUCKETS = Object.fromEntries(KEYSPACES.map((k) => [k, new PartitionKind(`pd-keyspace:${k}`)])) as Record<Keyspace, PartitionKind>;
/** A record's key inside its partition: the record key alone. */
const RECORD = new Subspace();
const SEALED_WITH = new Subspace(["sealed-with"]);

export const layout = {
  instanceKind: INSTANCE.kind,
  expiryKind: EXPIRY.kind,
  sealingKeyKind: SEALING_KEY.kind,
  bucketKind: (keyspace: Keyspace): string => BUCKETS[keyspace].kind,
  /** Every kind process data writes. */
  kinds: (): string[] => [INSTANCE.kind, EXPIRY.kind, ...KEYSPACES.map((k) => BUCKETS[k].kind), SEALING_KEY.kind],
  /** The keyspace a bucket partition (or, for an instance's partition, its form submissions) belongs to. */
  keyspaceOf: (partition: Partition): Keyspace => (INSTANCE.holds(partition) ? "bpm-form-submissions" : KEYSPACES.find((k) => BUCKETS[k].holds(partition))!),
  instance: (processInstanceId: string): Partition => INSTANCE.partition(processInstanceId),
  bucket: (keyspace: Keyspace, bucket: string): Partition => BUCKETS[keyspace].partition(bucket),
  bucketName: (partition: Partition): string => partition[1] as string,
  record: (recordKey: string): Key => RECORD.pack([recordKey]),
  /** The record key a stored key holds. */
  recordKeyOf: (key: Key): string => RECORD.unpack(key)[0] as string,
  /** Just after `recordKey` among a bucket's keys (a listing resumes there). */
  afterRecord: (recordKey: string): Key => RECORD.pack([recordKey, null]),
  expiry: (hourStart: number): Partition => EXPIRY.partition(hourStart),
  hourOfExpiry: (partition: Partition): number => partition[1] as number,
  expiryEntry: (expiresAt: number, keyspace: Keyspace, recordKey: string): Key => [expiresAt, keyspace, recordKey],
  /** The end (exclusive) of the expiry entries due at `now`. */
  expiryDue: (now: number): Key => [now + 1],
  entryOfExpiry: (key: Key): [number, Keyspace, string] => key as [number, Keyspace, string],
  sealingKey: SEALING_KEY.partition(),
  sealedWith: SEALED_WITH.pack(),
} as const;
