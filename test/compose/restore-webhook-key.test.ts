/**
 * A restore replaces the record of the store's webhook key (subscriptions/secrets.ts) with the backup's:
 * the server forgets that it recorded its own, so a secret it seals next is checked against the restored
 * record (a backup from a store with another webhook key is refused there, naming FLOWSTORE_WEBHOOK_KEY),
 * never sealed under a key the store does not name.
 */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("restore-webhook-key", "each");
const stores: Flowstore[] = [];
afterEach(async () => {
  while (stores.length) await stores.pop()!.close();
});

const open = async (key: Buffer): Promise<Flowstore> => {
  const store = await openFlowstore("memory:", { restoreDir: dir(), subscriptions: { secretKey: { key }, allow: ["127.0.0.1"] } });
  stores.push(store);
  await store.identity.ensureRoot("a long enough password"); // a backup holds a root
  return store;
};
const webhook = (store: Flowstore, name: string) => store.subscriptions.create(SYSTEM, { name, webhook: { url: "http://127.0.0.1:9/hook" } });

it("after a restore of a backup sealed under another webhook key, the next webhook is refused naming FLOWSTORE_WEBHOOK_KEY", async () => {
  const a = await open(randomBytes(32));
  await webhook(a, "under key A");
  const backup = await a.exportStore(SYSTEM);
  const [ndjson] = await Promise.all([text(backup.stream), backup.done]);

  const b = await open(randomBytes(32));
  await webhook(b, "under key B"); // B records its own key
  const staged = await b.stageRestore(SYSTEM, Readable.from([ndjson]));
  await staged.apply();
  // The store now names A's key: B may not seal a secret under its own.
  await expect(webhook(b, "after the restore")).rejects.toThrow(/FLOWSTORE_WEBHOOK_KEY/);
  // A store restored from its own backup takes webhooks again.
  const own = await b.exportStore(SYSTEM);
  const [same] = await Promise.all([text(own.stream), own.done]);
  const c = await open(randomBytes(32));
  await (await c.stageRestore(SYSTEM, Readable.from([same]))).apply();
  await expect(webhook(c, "c after restoring a store under A")).rejects.toThrow(/FLOWSTORE_WEBHOOK_KEY/);
});
