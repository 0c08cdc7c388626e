/** Process data (BPM interim storage): form submissions, message payloads, form schemas and form scripts. */
export { openProcessData, ProcessData, PROCESS_DATA_INTENTS } from "./service.js";
export type { ListOptions, ListPage, ProcessDataOptions, ProcessRecord, PutOptions } from "./service.js";
export { KEYSPACES, PATTERNS, keys, parseKey, parseKeyspace, validatePart, validateProcessInstanceId } from "./keys.js";
export type { Keyspace, ParsedKey } from "./keys.js";
export { DEFAULT_LIMITS, FIELDS } from "./records.js";
export type { AnyRecordFields, FormSchemaFields, FormScriptFields, FormSubmissionFields, Limits, MessagePayloadFields, RecordFields } from "./records.js";
export { KEY_FILE, TokenCipher } from "./crypto.js";
export type { KeyConfig } from "./crypto.js";
export type { SweepResult } from "./expiry.js";
