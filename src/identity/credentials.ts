/**
 * Credentials across a whole-store backup and restore (compose/backup.ts):
 *
 * - `isSecret(partition, key)`: the entries a backup taken over HTTP leaves out: password hashes and
 *   sessions (their refresh-secret hashes). Such a backup carries users, groups and grants, never a
 *   credential; an operator's export (the CLI, the system actor) carries them.
 * - `keepCurrentCredentials(before, after)`: after a restore, every user present both before it and in
 *   the restored content keeps the credentials it had before (its password hash and the record of an
 *   administrator's reset), whatever the backup held: a restore never brings back a password changed
 *   or revoked since the backup was taken. A user only the backup holds keeps the backup's hash, or
 *   none when the backup carried none (an administrator then sets one). Sessions need nothing here: a
 *   restore ends every session (the store's token epoch, identity/tokens.ts).
 */
import { scanAll, type Key, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { families, IDENTITY, passwordKey, PARTITION, resetKey } from "./records.js";

/** True for an entry a backup for an HTTP caller leaves out (a password hash or a session). */
export function isSecret(partition: Partition, key: Key): boolean {
  if (partition[0] !== IDENTITY.kind) return false;
  return families.password.contains(key) || families.session.contains(key);
}

/** Gives every user present in both stores the password and reset record it has in `before` (see above). */
export async function keepCurrentCredentials(before: KvStore, after: KvStore): Promise<{ kept: number }> {
  const users = async (kv: KvStore): Promise<Set<string>> => {
    const ids = new Set<string>();
    for await (const e of scanAll(kv, PARTITION, { prefix: families.user.prefix })) ids.add(families.user.unpack(e.key)[0] as string);
    return ids;
  };
  const [was, is] = await Promise.all([users(before), users(after)]);
  const ops: Op[] = [];
  for (const id of is) {
    if (!was.has(id)) continue;
    const [password, reset] = await before.getMany(PARTITION, [passwordKey(id), resetKey(id)]);
    ops.push(password ? { type: "put", key: passwordKey(id), value: password.value } : { type: "delete", key: passwordKey(id) });
    ops.push(reset ? { type: "put", key: resetKey(id), value: reset.value } : { type: "delete", key: resetKey(id) });
  }
  for (let i = 0; i < ops.length; i += 500) await after.commit(PARTITION, ops.slice(i, i + 500));
  return { kept: ops.length / 2 };
}
