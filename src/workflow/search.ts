/**
 * TruBudget's project search syntax, evaluated on the server (its overview's quick search):
 *
 * - the text is split at whitespace into terms; every match is a case-insensitive substring match;
 * - `name:x`, `tag:x` and `status:x` restrict a term to the display name, a tag or the status; terms of
 *   the same prefix are alternatives (any of the `tag:` terms), terms of different prefixes all apply;
 * - a term without a known prefix must match the display name, the id, the status or a tag (every such
 *   term must match). TruBudget ignores terms with an unknown prefix; here they are free text, since an
 *   id may hold a colon. The id is flowstore's addition (issue #14: "free text over display name and id").
 *
 * A redacted row (the caller may not view the resource) has no display name or tags to match.
 */
import type { ListRow } from "../resources/model/schema.js";

const PREFIXES = ["name", "tag", "status"] as const;
type Prefix = (typeof PREFIXES)[number];

export interface ParsedSearch {
  readonly name: string[];
  readonly tag: string[];
  readonly status: string[];
  readonly free: string[];
}

export function parseSearch(text: string): ParsedSearch {
  const out: ParsedSearch = { name: [], tag: [], status: [], free: [] };
  for (const raw of text.split(/\s+/)) {
    if (raw === "") continue;
    const term = raw.toLowerCase();
    const colon = term.indexOf(":");
    const prefix = colon > 0 ? term.slice(0, colon) : "";
    if ((PREFIXES as readonly string[]).includes(prefix)) {
      const value = term.slice(colon + 1);
      if (value !== "") out[prefix as Prefix].push(value);
    } else {
      out.free.push(term);
    }
  }
  return out;
}

const has = (v: unknown, term: string): boolean => typeof v === "string" && v.toLowerCase().includes(term);
const tagsOf = (row: ListRow): unknown[] => (Array.isArray(row.data.tags) ? row.data.tags : []);

/** The predicate of a search over list rows (display name, tags, status, id). */
export function projectSearch(text: string): (row: ListRow) => boolean {
  const q = parseSearch(text);
  return (row) =>
    (q.name.length === 0 || q.name.some((t) => has(row.data.displayName, t))) &&
    (q.tag.length === 0 || q.tag.some((t) => tagsOf(row).some((tag) => has(tag, t)))) &&
    (q.status.length === 0 || q.status.some((t) => has(row.status, t))) &&
    q.free.every((t) => has(row.data.displayName, t) || has(row.id, t) || has(row.status, t) || tagsOf(row).some((tag) => has(tag, t)));
}

/** The search and sort of projects and of a project's subprojects (`GET …?search=&sort=&order=`). */
export const PROJECT_QUERY = {
  fields: ["displayName", "assignee", "tags"],
  sort: ["id", "displayName", "createdAt", "status", "assignee"],
  search: projectSearch,
} as const;
