/**
 * Seed 000, layout 1: each resource has its own stream (append-only versions, the newest is the state),
 * and a parent links its children as an array of ids. Listing a subproject reads the subproject's stream
 * for its id array, then each child's stream: N+1 reads. Stored on lmdb-js:
 *
 *   P/<p>\0<seq>           project version        {data, children: [subproject ids]}
 *   S/<p>/<s>\0<seq>       subproject version     {data, children: [item ids, creation order], ordering}
 *   W/<p>/<s>/<w>\0<seq>   workflowitem version   the item's public JSON (each version a full copy: its history)
 */
import { joinItems } from "./flowstore.js";
import { durably, openDb, pad, type Db } from "./lmdb-streams.js";
import { createdAtOf, effectiveOrderOf, newItemJson, type ItemJson, type Peer } from "./peer.js";
import type { Tree } from "../tree.js";

interface Parent {
  data: Record<string, unknown>;
  children: string[];
  ordering?: string[];
}

export class Layout1Peer implements Peer {
  readonly name = "seed 000 layout 1 (stream per resource, child id arrays)";
  readonly #db: Db;

  constructor(dir: string) {
    this.#db = openDb(dir);
  }

  /** The newest version of a stream and its seq. */
  #latest(stream: string): { seq: number; value: Buffer } | undefined {
    for (const { key, value } of this.#db.getRange({ start: `${stream}\0\uffff`, end: `${stream}\0`, reverse: true, limit: 1 })) {
      return { seq: Number(key.slice(stream.length + 1)), value };
    }
    return undefined;
  }

  #append(stream: string, value: Buffer | string): void {
    const seq = (this.#latest(stream)?.seq ?? 0) + 1;
    this.#db.putSync(`${stream}\0${pad(seq)}`, typeof value === "string" ? Buffer.from(value) : value);
  }

  async load(tree: Tree): Promise<void> {
    const base = Date.now();
    for (const p of tree.projects) {
      await durably(this.#db, () => {
        this.#append(`P/${p.id}`, JSON.stringify({ data: { displayName: `Project ${p.id}` }, children: p.subprojects.map((s) => s.id) }));
        for (const s of p.subprojects) {
          s.items.forEach((it, i) => {
            const { id, ...data } = it.data;
            this.#append(`W/${p.id}/${s.id}/${id}`, JSON.stringify(newItemJson(id, data, createdAtOf(base, i))));
          });
          this.#append(`S/${p.id}/${s.id}`, JSON.stringify({ data: { displayName: `Subproject ${s.id}` }, children: s.items.map((x) => x.id), ordering: s.ordering }));
        }
      });
    }
    for (let i = 0; i < tree.updates.length; i += 1000) {
      await durably(this.#db, () => {
        for (const u of tree.updates.slice(i, i + 1000)) this.#update(u.p, u.s, u.w, u.patch);
      });
    }
  }

  async getItem(p: string, s: string, w: string): Promise<Buffer> {
    return this.#latest(`W/${p}/${s}/${w}`)!.value;
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: Buffer }> {
    const sub = JSON.parse(this.#latest(`S/${p}/${s}`)!.value.toString()) as Parent;
    const items = sub.children.map((w) => ({ id: w, json: this.#latest(`W/${p}/${s}/${w}`)!.value }));
    const ordered = effectiveOrderOf(sub.ordering ?? [], items, (x) => x.id);
    return { count: ordered.length, body: joinItems(ordered.map((x) => x.json)) };
  }

  #update(p: string, s: string, w: string, patch: { description: string }): void {
    const stream = `W/${p}/${s}/${w}`;
    const item = JSON.parse(this.#latest(stream)!.value.toString()) as ItemJson;
    Object.assign(item.data, patch);
    item.meta.updatedAt = new Date().toISOString();
    item.meta.version++;
    this.#append(stream, JSON.stringify(item));
  }

  updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    return durably(this.#db, () => this.#update(p, s, w, patch));
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: Buffer }> {
    const stream = `W/${p}/${s}/${w}\0`;
    const versions = [...this.#db.getRange({ start: stream, end: stream + "\uffff" }).map((e) => e.value)];
    return { count: versions.length, body: joinItems(versions) };
  }

  reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    return durably(this.#db, () => {
      const stream = `S/${p}/${s}`;
      const sub = JSON.parse(this.#latest(stream)!.value.toString()) as Parent;
      const known = new Set(sub.children);
      if (!ordering.every((id) => known.has(id))) throw new Error("ordering names an unknown id");
      sub.ordering = [...ordering];
      this.#append(stream, JSON.stringify(sub));
    });
  }

  deleteProject(p: string): Promise<void> {
    // walk the tree by the id arrays (N+1 reads) and drop every stream
    return durably(this.#db, () => {
      const drop = (stream: string) => {
        for (const k of this.#db.getKeys({ start: `${stream}\0`, end: `${stream}\0\uffff` })) this.#db.removeSync(k);
      };
      const project = JSON.parse(this.#latest(`P/${p}`)!.value.toString()) as Parent;
      for (const s of project.children) {
        const sub = JSON.parse(this.#latest(`S/${p}/${s}`)!.value.toString()) as Parent;
        for (const w of sub.children) drop(`W/${p}/${s}/${w}`);
        drop(`S/${p}/${s}`);
      }
      drop(`P/${p}`);
    });
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
