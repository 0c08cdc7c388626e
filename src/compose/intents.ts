/**
 * The registry of global intents as flowstore assembles it: access's own, identity's, the archive's,
 * process data's, the whole store's backups (backup.ts), subscriptions' (the operators' intent), erasing a data subject
 * (erasure.ts), and the create intents of the root types of
 * each schema served. Each list is declared once in its own layer; this is the one place that gathers
 * them.
 */
import { IntentRegistry } from "../access/intents.js";
import { ARCHIVE_INTENTS } from "../archive/archive.js";
import { IDENTITY_INTENTS } from "../identity/identity.js";
import { PROCESS_DATA_INTENTS } from "../process-data/service.js";
import type { Schema } from "../resources/model/schema.js";
import { SUBSCRIPTION_INTENTS } from "../subscriptions/subscriptions.js";
import { BACKUP_INTENTS } from "./backup.js";
import { ERASURE_INTENTS } from "./erasure.js";

export function flowstoreIntents(...schemas: readonly Pick<Schema, "globalIntents">[]): IntentRegistry {
  return new IntentRegistry(...schemas.map((s) => s.globalIntents), IDENTITY_INTENTS, ARCHIVE_INTENTS, PROCESS_DATA_INTENTS, BACKUP_INTENTS, SUBSCRIPTION_INTENTS, ERASURE_INTENTS);
}
