/** The partition kinds identity writes (users, groups and passwords share one partition). */
import { IDENTITY } from "./records.js";

export const IDENTITY_KINDS: readonly string[] = [IDENTITY.kind];
