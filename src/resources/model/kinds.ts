import { layout } from "./layout.js";

/** The partition kinds the resources layer writes besides each schema's owner types. */
export const RESOURCE_KINDS: readonly string[] = ["global", layout.sweeps[0] as string, layout.ledger[0] as string, layout.feed[0] as string, layout.visibleKind, layout.assignedKind];
