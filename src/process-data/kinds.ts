/** The partition kinds process data writes: instances, keyspace buckets, the expiry index and the sealing key's id. */
import { EXPIRY_KIND } from "./expiry.js";
import { bucketKind, INSTANCE_KIND, KEYSPACES } from "./keys.js";
import { SEALING_KEY_KIND } from "./sealing-key.js";

export const PROCESS_DATA_KINDS: readonly string[] = [INSTANCE_KIND, EXPIRY_KIND, ...KEYSPACES.map(bucketKind), SEALING_KEY_KIND];
