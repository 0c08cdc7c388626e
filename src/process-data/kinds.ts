/** The partition kinds process data writes: instances, keyspace buckets and the expiry index. */
import { EXPIRY_KIND } from "./expiry.js";
import { bucketKind, INSTANCE_KIND, KEYSPACES } from "./keys.js";

export const PROCESS_DATA_KINDS: readonly string[] = [INSTANCE_KIND, EXPIRY_KIND, ...KEYSPACES.map(bucketKind)];
