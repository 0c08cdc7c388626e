/**
 * The small interface every peer implements, so flowstore and each alternative design run the same
 * workload on the same data (bench/tree.ts). Reads return what an API would send (JSON text or bytes);
 * writes are durable when their promise resolves (each peer says how).
 */
import type { Tree } from "../tree.js";

export interface Peer {
  readonly name: string;
  /** Loads the tree (bulk where the design allows; not measured). */
  load(tree: Tree): Promise<void>;
  /** One workflowitem's JSON. */
  getItem(p: string, s: string, w: string): Promise<string | Buffer>;
  /** A subproject's workflowitems in effective order, permissions applied for `MARY`: the JSON body and the item count. */
  listSubproject(p: string, s: string): Promise<{ count: number; body: string | Buffer }>;
  /** Changes one field of a workflowitem and records the change (one event). */
  updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void>;
  /** The workflowitem's events (JSON) and their count. */
  history(p: string, s: string, w: string): Promise<{ count: number; body: string | Buffer }>;
  /** Replaces the subproject's manual ordering. */
  reorder(p: string, s: string, ordering: readonly string[]): Promise<void>;
  /** Deletes a project and everything under it. */
  deleteProject(p: string): Promise<void>;
  close(): Promise<void>;
}

/** Effective order (TruBudget's: the ordering's ids first, then by creation) for peers that hold items in creation order: ordering ids first, then the rest. */
export function effectiveOrderOf<T>(ordering: readonly string[], inCreationOrder: readonly T[], idOf: (x: T) => string): T[] {
  const byId = new Map(inCreationOrder.map((x) => [idOf(x), x]));
  const out: T[] = [];
  const placed = new Set<string>();
  for (const id of ordering) {
    const x = byId.get(id);
    if (x !== undefined && !placed.has(id)) {
      out.push(x);
      placed.add(id);
    }
  }
  for (const x of inCreationOrder) if (!placed.has(idOf(x))) out.push(x);
  return out;
}

/** The public JSON of a workflowitem as the peers build it (the same shape flowstore serves). */
export interface ItemJson {
  id: string;
  type: "workflowitem";
  data: Record<string, unknown>;
  meta: { createdAt: string; createdBy: string; updatedAt: string; version: number };
}

export function newItemJson(id: string, data: Record<string, unknown>, createdAt: string): ItemJson {
  return { id, type: "workflowitem", data: { ...data, status: "open" }, meta: { createdAt, createdBy: "mary", updatedAt: createdAt, version: 1 } };
}

/** A creation time per item, strictly increasing in creation order. */
export const createdAtOf = (base: number, i: number): string => new Date(base + i).toISOString();

/** Who may view an item created by mary and assigned as in the tree: the creator, the assignee. */
export const viewersOf = (assignee: string | undefined): string[] => [...new Set(["mary", ...(assignee ? [assignee] : [])])];
