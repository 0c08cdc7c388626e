/** The partition kinds identity writes (users, groups and passwords share one partition; the login guard has its own). */
import { IDENTITY, LOGIN_GUARD } from "./records.js";

export const IDENTITY_KINDS: readonly string[] = [IDENTITY.kind];
/** The login guard's counters: identity's too, but kept on restore (records.ts). */
export const LOGIN_GUARD_KINDS: readonly string[] = [LOGIN_GUARD.kind];
