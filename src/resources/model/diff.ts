/**
 * Field-level diffs of a resource's data: what an update changed, as a list of `{path, old, new}` with
 * `path` an RFC 6901 JSON Pointer into the data (`/amount`, `/additionalData/k`, `/projectedBudgets/0/value`).
 * Objects are compared member by member and arrays element by element, so a change deep in a structure
 * is named where it is; `old` is absent for a member added, `new` for a member removed. Every update
 * event carries the diff of the command that wrote it (writes.ts `changes`), with the reason the actor
 * gave (`reason`, log/writer.ts); `renderChanges` derives the same list from a replay for an event
 * written before diffs were recorded (audit.ts, `diff: true`).
 */
import { foldStep, type FieldChange, type Folded, type ResourceEvent } from "./events.js";

export type { FieldChange };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** One step of a JSON Pointer (RFC 6901: `~` as `~0`, `/` as `~1`). */
export const pointerStep = (key: string | number): string => `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && same(a[k], b[k]));
  }
  return false;
}

/** Array fields matched by key (a type's `keyedArrays`): field name → the members that identify an element. */
export type ArrayKeys = Readonly<Record<string, readonly string[]>>;

type Keyed = ReadonlyMap<string, readonly string[]>;

const keyOf = (element: unknown, members: readonly string[]): string | null =>
  isObject(element) && members.every((m) => m in element) ? JSON.stringify(members.map((m) => element[m])) : null;

function walk(path: string, before: unknown, after: unknown, keyed: Keyed, out: FieldChange[], key?: Record<string, unknown>): void {
  if (same(before, after)) return;
  const at = (change: FieldChange): FieldChange => (key === undefined ? change : { ...change, key });
  if (isObject(before) && isObject(after)) {
    for (const k of Object.keys(before)) {
      const p = path + pointerStep(k);
      if (k in after) walk(p, before[k], after[k], keyed, out, key);
      else out.push(at({ path: p, old: before[k] }));
    }
    for (const k of Object.keys(after)) if (!(k in before)) out.push(at({ path: path + pointerStep(k), new: after[k] }));
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const members = keyed.get(path);
    if (members !== undefined && [...before, ...after].every((e) => keyOf(e, members) !== null)) {
      keyedWalk(path, before, after, members, keyed, out);
      return;
    }
    const n = Math.max(before.length, after.length);
    for (let i = 0; i < n; i++) {
      const p = path + pointerStep(i);
      if (i >= after.length) out.push(at({ path: p, old: before[i] }));
      else if (i >= before.length) out.push(at({ path: p, new: after[i] }));
      else walk(p, before[i], after[i], keyed, out, key);
    }
    return;
  }
  out.push(at({ path, old: before, new: after }));
}

/**
 * A keyed array: elements are matched by their key, not their place, and their order is not a change.
 * A removed element is named by its place before, a kept or added one by its place after; each change
 * carries the element's `key`.
 */
function keyedWalk(path: string, before: unknown[], after: unknown[], members: readonly string[], keyed: Keyed, out: FieldChange[]): void {
  const keyObject = (e: unknown) => Object.fromEntries(members.map((m) => [m, (e as Record<string, unknown>)[m]]));
  const was = new Map(before.map((e, i) => [keyOf(e, members)!, i]));
  const now = new Set(after.map((e) => keyOf(e, members)!));
  before.forEach((e, i) => {
    if (!now.has(keyOf(e, members)!)) out.push({ path: path + pointerStep(i), old: e, key: keyObject(e) });
  });
  after.forEach((e, i) => {
    const j = was.get(keyOf(e, members)!);
    if (j === undefined) out.push({ path: path + pointerStep(i), new: e, key: keyObject(e) });
    else walk(path + pointerStep(i), before[j], e, keyed, out, keyObject(e));
  });
}

/**
 * The changes that turn `before` into `after` (both a resource's data), in the order of their members;
 * empty when equal (or when only the order of a keyed array's elements changed). `keys`: the type's
 * keyed array fields (schema.ts `keyedArrays`).
 */
export function diffData(before: Record<string, unknown>, after: Record<string, unknown>, keys: ArrayKeys = {}): FieldChange[] {
  const out: FieldChange[] = [];
  walk("", before, after, new Map(Object.entries(keys).map(([field, members]) => [pointerStep(field), members])), out);
  return out;
}

/**
 * The diff of each event of one resource's history (oldest first) that changed its data (an update or a
 * domain command with a data patch), from a replay of that history: seq → changes. Events that carry
 * their `changes` agree with it (test/resources/diff.property.test.ts).
 */
export function renderChanges(history: readonly ResourceEvent[], keys: ArrayKeys = {}): Map<number, FieldChange[]> {
  const out = new Map<number, FieldChange[]>();
  let state: Folded | null = null;
  for (const e of history) {
    // A patch replaces top-level members whole, so a shallow copy keeps the data before the step.
    const before = state === null ? null : { ...state.data };
    state = foldStep(state, e);
    const verb = e.type.slice(e.type.indexOf(".") + 1);
    if (before !== null && state !== null && verb !== "created" && e.payload.data !== undefined) out.set(e.seq, diffData(before, state.data, keys));
  }
  return out;
}
