/** The partition kinds identity writes (users, groups and passwords share one partition). */
import { PARTITION } from "./records.js";

export const IDENTITY_KINDS: readonly string[] = [PARTITION[0]];
