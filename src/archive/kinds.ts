/** The partition kinds the archive writes, declared once in layout.ts. */
import { ARCHIVE_KIND_NAMES } from "./layout.js";

export const ARCHIVE_KINDS: readonly string[] = ARCHIVE_KIND_NAMES;
