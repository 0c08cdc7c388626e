/** The partition kinds process data writes: instances, keyspace buckets, the expiry index and the sealing key's id (layout.ts). */
import { layout } from "./layout.js";

export const PROCESS_DATA_KINDS: readonly string[] = layout.kinds();
