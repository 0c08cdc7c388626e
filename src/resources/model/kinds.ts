import { GLOBAL } from "../../access/global.js";
import { layout } from "./layout.js";

/** The partition kinds the resources layer writes besides each schema's owner types. */
export const RESOURCE_KINDS: readonly string[] = [GLOBAL.kind, layout.sweeps[0] as string, layout.ledger[0] as string, layout.feed[0] as string, layout.visibleKind, layout.assignedKind];
