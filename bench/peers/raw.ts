/**
 * The limit: raw lmdb-js with hand-written string keys, no envelope, no permissions, no hash chain.
 * One key prefix per project; an item's value is 8 bytes of creation time (for ordering without parsing)
 * followed by its public JSON; the list joins stored bytes.
 *
 *   <p>\0i\0<s>\0<w>          createdAt (f64) ++ item JSON
 *   <p>\0o\0<s>               ordering (JSON array)
 *   <p>\0h\0<s>\0<w>\0<seq>   event JSON
 */
import { joinItems } from "./flowstore.js";
import { durably, openDb, pad, removePrefix, type Db } from "./lmdb-streams.js";
import { createdAtOf, newItemJson, type ItemJson, type Peer } from "./peer.js";
import type { Tree } from "../tree.js";

const withTime = (ms: number, json: string): Buffer => {
  const b = Buffer.allocUnsafe(8 + Buffer.byteLength(json));
  b.writeDoubleBE(ms, 0);
  b.write(json, 8);
  return b;
};

export class RawPeer implements Peer {
  readonly name = "raw lmdb (hand-written keys)";
  readonly #db: Db;
  #seq = 0;

  constructor(dir: string) {
    this.#db = openDb(dir);
  }

  async load(tree: Tree): Promise<void> {
    const base = Date.now();
    const db = this.#db;
    for (const p of tree.projects) {
      await durably(db, () => {
        for (const s of p.subprojects) {
          s.items.forEach((it, i) => {
            const { id, ...data } = it.data;
            const at = createdAtOf(base, i);
            const json = JSON.stringify(newItemJson(id, data, at));
            db.putSync(`${p.id}\0i\0${s.id}\0${id}`, withTime(Date.parse(at), json));
            db.putSync(`${p.id}\0h\0${s.id}\0${id}\0${pad(++this.#seq)}`, Buffer.from(JSON.stringify({ seq: this.#seq, at, type: "workflowitem.created", data })));
          });
          if (s.ordering.length) db.putSync(`${p.id}\0o\0${s.id}`, Buffer.from(JSON.stringify(s.ordering)));
        }
      });
    }
    for (let i = 0; i < tree.updates.length; i += 1000) {
      await durably(db, () => {
        for (const u of tree.updates.slice(i, i + 1000)) this.#update(u.p, u.s, u.w, u.patch);
      });
    }
  }

  async getItem(p: string, s: string, w: string): Promise<Buffer> {
    const v = this.#db.get(`${p}\0i\0${s}\0${w}`);
    if (!v) throw new Error("missing");
    return v.subarray(8);
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: Buffer }> {
    const o = this.#db.get(`${p}\0o\0${s}`);
    const ordering: string[] = o ? JSON.parse(o.toString()) : [];
    const prefix = `${p}\0i\0${s}\0`;
    const rows: { id: string; at: number; json: Buffer }[] = [];
    for (const { key, value } of this.#db.getRange({ start: prefix, end: prefix + "\uffff" })) {
      rows.push({ id: key.slice(prefix.length), at: value.readDoubleBE(0), json: value.subarray(8) });
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    const placed = new Set<string>();
    const out: Buffer[] = [];
    for (const id of ordering) {
      const r = byId.get(id);
      if (r && !placed.has(id)) out.push(r.json), placed.add(id);
    }
    const rest = rows.filter((r) => !placed.has(r.id)).sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
    for (const r of rest) out.push(r.json);
    return { count: out.length, body: joinItems(out) };
  }

  #update(p: string, s: string, w: string, patch: { description: string }): void {
    const key = `${p}\0i\0${s}\0${w}`;
    const v = this.#db.get(key)!;
    const item = JSON.parse(v.toString("utf8", 8)) as ItemJson;
    const at = new Date().toISOString();
    Object.assign(item.data, patch);
    item.meta.updatedAt = at;
    item.meta.version++;
    this.#db.putSync(key, withTime(v.readDoubleBE(0), JSON.stringify(item)));
    this.#db.putSync(`${p}\0h\0${s}\0${w}\0${pad(++this.#seq)}`, Buffer.from(JSON.stringify({ seq: this.#seq, at, type: "workflowitem.updated", data: patch })));
  }

  updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    return durably(this.#db, () => this.#update(p, s, w, patch));
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: Buffer }> {
    const prefix = `${p}\0h\0${s}\0${w}\0`;
    const events = [...this.#db.getRange({ start: prefix, end: prefix + "\uffff" }).map((e) => e.value)];
    return { count: events.length, body: joinItems(events) };
  }

  reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    return durably(this.#db, () => this.#db.putSync(`${p}\0o\0${s}`, Buffer.from(JSON.stringify(ordering))));
  }

  deleteProject(p: string): Promise<void> {
    return durably(this.#db, () => void removePrefix(this.#db, `${p}\0`));
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
