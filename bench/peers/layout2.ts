/**
 * Seed 000, layout 2: the whole project tree is one JSON value (resources, orderings and logs), read
 * and parsed whole for every query and rewritten whole on every change. Stored on lmdb-js under the
 * project id (the newest value only; the layout's append-only stream would also keep every old copy).
 */
import { durably, openDb, type Db } from "./lmdb-streams.js";
import { createdAtOf, effectiveOrderOf, newItemJson, type ItemJson, type Peer } from "./peer.js";
import type { Tree } from "../tree.js";

interface Ev {
  type: string;
  at: string;
  data: Record<string, unknown>;
}

interface ProjectTree {
  data: Record<string, unknown>;
  subprojects: Record<string, { data: Record<string, unknown>; ordering: string[]; items: Record<string, { state: ItemJson; log: Ev[] }> }>;
}

export class Layout2Peer implements Peer {
  readonly name = "seed 000 layout 2 (project tree as one JSON value)";
  readonly #db: Db;

  constructor(dir: string) {
    this.#db = openDb(dir);
  }

  #read(p: string): ProjectTree {
    return JSON.parse(this.#db.get(p)!.toString()) as ProjectTree;
  }

  async load(tree: Tree): Promise<void> {
    const base = Date.now();
    for (const p of tree.projects) {
      const t: ProjectTree = { data: { displayName: `Project ${p.id}` }, subprojects: {} };
      for (const s of p.subprojects) {
        const items: ProjectTree["subprojects"][string]["items"] = {};
        s.items.forEach((it, i) => {
          const { id, ...data } = it.data;
          const at = createdAtOf(base, i);
          items[id] = { state: newItemJson(id, data, at), log: [{ type: "created", at, data }] };
        });
        t.subprojects[s.id] = { data: { displayName: `Subproject ${s.id}` }, ordering: s.ordering, items };
      }
      for (const u of tree.updates) if (u.p === p.id) this.#applyUpdate(t, u.s, u.w, u.patch);
      await durably(this.#db, () => this.#db.putSync(p.id, Buffer.from(JSON.stringify(t))));
    }
  }

  #applyUpdate(t: ProjectTree, s: string, w: string, patch: { description: string }): void {
    const it = t.subprojects[s]!.items[w]!;
    const at = new Date().toISOString();
    Object.assign(it.state.data, patch);
    it.state.meta.updatedAt = at;
    it.state.meta.version++;
    it.log.push({ type: "updated", at, data: patch });
  }

  async getItem(p: string, s: string, w: string): Promise<string> {
    return JSON.stringify(this.#read(p).subprojects[s]!.items[w]!.state);
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: string }> {
    const sub = this.#read(p).subprojects[s]!;
    const ordered = effectiveOrderOf(
      sub.ordering,
      Object.values(sub.items).map((x) => x.state),
      (x) => x.id,
    );
    return { count: ordered.length, body: JSON.stringify({ items: ordered, nextCursor: null }) };
  }

  updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    return durably(this.#db, () => {
      const t = this.#read(p);
      this.#applyUpdate(t, s, w, patch);
      this.#db.putSync(p, Buffer.from(JSON.stringify(t)));
    });
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: string }> {
    const log = this.#read(p).subprojects[s]!.items[w]!.log;
    return { count: log.length, body: JSON.stringify({ items: log, nextCursor: null }) };
  }

  reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    return durably(this.#db, () => {
      const t = this.#read(p);
      const sub = t.subprojects[s]!;
      if (!ordering.every((id) => id in sub.items)) throw new Error("ordering names an unknown id");
      sub.ordering = [...ordering];
      this.#db.putSync(p, Buffer.from(JSON.stringify(t)));
    });
  }

  deleteProject(p: string): Promise<void> {
    return durably(this.#db, () => void this.#db.removeSync(p));
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
