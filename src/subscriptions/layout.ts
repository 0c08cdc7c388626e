/**
 * The keys of subscriptions (issue 26, part 3), named once here through kv's Subspace:
 *
 *   ["subscription", id]   ["s"] the subscription (owner, filter, webhook with its secret)
 *                          ["c"] its cursor {position, seq}: the feed entries before `position` are
 *                                acknowledged, and of entry `position` the events up to `seq` (null: all)
 *                          ["p", ...partition] seq   the last seq acknowledged of each partition (a crash's gap, feed.ts)
 *                          ["l"] the delivery lease {holder, until} (one server of a fleet delivers a webhook)
 *                          ["r"] the webhook's retry state {attempts, nextAt, error}
 *                          ["d", n] a dead letter (a delivery given up after its last retry), n = 1, 2, 3…
 *                          ["dn"] the next dead letter's number
 *                          ["g"] the day of the last digest delivered (YYYY-MM-DD, UTC)
 *
 *   ["subscription-key"]   ["sealed-with"] the id of the key webhook secrets are sealed with (secrets.ts)
 *
 * One partition per subscription: its cursor, lease and dead letters change together in one commit.
 */
import type { Key, Partition } from "../kv/contract.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";

const kind = new PartitionKind("subscription");
const keyKind = new PartitionKind("subscription-key");

export const subscriptionLayout = {
  kind,
  partition: (id: string): Partition => kind.partition(id),
  record: new Subspace(["s"]).pack() as Key,
  cursor: new Subspace(["c"]).pack() as Key,
  marks: new Subspace(["p"]),
  lease: new Subspace(["l"]).pack() as Key,
  retry: new Subspace(["r"]).pack() as Key,
  dead: new Subspace(["d"]),
  deadNext: new Subspace(["dn"]).pack() as Key,
  digestDay: new Subspace(["g"]).pack() as Key,
  sealingKey: keyKind.partition(),
  sealedWith: new Subspace(["sealed-with"]).pack() as Key,
} as const;

/** The partition kinds this layer writes (for export, import and the registry of kinds). */
export const SUBSCRIPTION_KINDS: readonly string[] = [kind.kind, keyKind.kind];
