/** The partition kinds the resources layer writes besides each schema's owner types, declared once in layout.ts (and access's GLOBAL). */
import { GLOBAL } from "../../access/global.js";
import { kinds } from "./layout.js";

export const RESOURCE_KINDS: readonly string[] = [GLOBAL.kind, ...Object.values(kinds).map((k) => k.kind)];
