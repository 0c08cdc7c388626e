/**
 * Replay on read, as TruBudget does: the event log is the only truth; every read rebuilds state by
 * replaying events, starting from the newest snapshot (one is written every 3 events of a resource).
 * Stored on lmdb-js, one stream per resource inside the project's key range:
 *
 *   <p>\0<s>\0<w>\0e\0<seq>     event JSON ({type, at, data})
 *   <p>\0<s>\0<w>\0s\0<seq>     snapshot JSON (the item's state after event <seq>)
 *   <p>\0<s>\0~\0e\0<seq>       the subproject's own events (orderings)
 */
import { durably, openDb, pad, removePrefix, type Db } from "./lmdb-streams.js";
import { createdAtOf, effectiveOrderOf, newItemJson, type ItemJson, type Peer } from "./peer.js";
import type { Tree } from "../tree.js";

interface Ev {
  type: string;
  at: string;
  data: Record<string, unknown>;
  ordering?: string[];
}

const SNAPSHOT_EVERY = 3;

function apply(state: ItemJson | null, id: string, e: Ev): ItemJson {
  if (e.type === "created") return newItemJson(id, e.data, e.at);
  const s = state!;
  Object.assign(s.data, e.data);
  s.meta.updatedAt = e.at;
  s.meta.version++;
  return s;
}

export class ReplayPeer implements Peer {
  readonly name = "replay on read (TruBudget-style, snapshot every 3 events)";
  readonly #db: Db;

  constructor(dir: string) {
    this.#db = openDb(dir);
  }

  /** Appends an event to an item's stream, with a snapshot every 3 events (inside a write transaction). */
  #append(p: string, s: string, w: string, e: Ev): void {
    const stream = `${p}\0${s}\0${w}\0`;
    let seq = 0;
    for (const k of this.#db.getKeys({ start: `${stream}e\0\uffff`, end: `${stream}e\0`, reverse: true, limit: 1 })) seq = Number(k.slice(stream.length + 2));
    seq++;
    this.#db.putSync(`${stream}e\0${pad(seq)}`, Buffer.from(JSON.stringify(e)));
    if (seq % SNAPSHOT_EVERY === 0) this.#db.putSync(`${stream}s\0${pad(seq)}`, Buffer.from(JSON.stringify(this.#replay(stream, w))));
  }

  /** The item's state: the newest snapshot, then every later event. */
  #replay(stream: string, w: string): ItemJson {
    let state: ItemJson | null = null;
    let from = 0;
    for (const { key, value } of this.#db.getRange({ start: `${stream}s\0\uffff`, end: `${stream}s\0`, reverse: true, limit: 1 })) {
      state = JSON.parse(value.toString()) as ItemJson;
      from = Number(key.slice(stream.length + 2));
    }
    for (const { value } of this.#db.getRange({ start: `${stream}e\0${pad(from + 1)}`, end: `${stream}e\0\uffff` })) state = apply(state, w, JSON.parse(value.toString()) as Ev);
    if (!state) throw new Error(`no events for ${stream}`);
    return state;
  }

  async load(tree: Tree): Promise<void> {
    const base = Date.now();
    for (const p of tree.projects) {
      await durably(this.#db, () => {
        for (const s of p.subprojects) {
          s.items.forEach((it, i) => {
            const { id, ...data } = it.data;
            this.#append(p.id, s.id, id, { type: "created", at: createdAtOf(base, i), data });
          });
          if (s.ordering.length)
            this.#db.putSync(
              `${p.id}\0${s.id}\0~\0e\0${pad(1)}`,
              Buffer.from(JSON.stringify({ type: "ordering_set", at: new Date().toISOString(), data: {}, ordering: s.ordering })),
            );
        }
      });
    }
    for (let i = 0; i < tree.updates.length; i += 1000) {
      await durably(this.#db, () => {
        for (const u of tree.updates.slice(i, i + 1000)) this.#append(u.p, u.s, u.w, { type: "updated", at: new Date().toISOString(), data: u.patch });
      });
    }
  }

  async getItem(p: string, s: string, w: string): Promise<string> {
    return JSON.stringify(this.#replay(`${p}\0${s}\0${w}\0`, w));
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: string }> {
    // one range read of the subproject's streams; per item, replay from its newest snapshot
    const prefix = `${p}\0${s}\0`;
    const items = new Map<string, { snap: Buffer | null; snapSeq: number; events: { seq: number; value: Buffer }[] }>();
    let ordering: string[] = [];
    for (const { key, value } of this.#db.getRange({ start: prefix, end: prefix + "\uffff" })) {
      const rest = key.slice(prefix.length);
      const cut = rest.indexOf("\0");
      const w = rest.slice(0, cut);
      const kind = rest[cut + 1];
      const seq = Number(rest.slice(cut + 3));
      if (w === "~") {
        const e = JSON.parse(value.toString()) as Ev;
        if (e.ordering) ordering = e.ordering;
        continue;
      }
      let it = items.get(w);
      if (!it) items.set(w, (it = { snap: null, snapSeq: 0, events: [] }));
      if (kind === "e") it.events.push({ seq, value });
      else if (seq > it.snapSeq) (it.snap = value), (it.snapSeq = seq);
    }
    const states: ItemJson[] = [];
    for (const [w, it] of items) {
      let state: ItemJson | null = it.snap ? (JSON.parse(it.snap.toString()) as ItemJson) : null;
      for (const e of it.events) if (e.seq > it.snapSeq) state = apply(state, w, JSON.parse(e.value.toString()) as Ev);
      states.push(state!);
    }
    states.sort((a, b) => (a.meta.createdAt < b.meta.createdAt ? -1 : a.meta.createdAt > b.meta.createdAt ? 1 : a.id < b.id ? -1 : 1));
    const ordered = effectiveOrderOf(ordering, states, (x) => x.id);
    return { count: ordered.length, body: JSON.stringify({ items: ordered, nextCursor: null }) };
  }

  updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    return durably(this.#db, () => this.#append(p, s, w, { type: "updated", at: new Date().toISOString(), data: patch }));
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: string }> {
    const prefix = `${p}\0${s}\0${w}\0e\0`;
    const events = [...this.#db.getRange({ start: prefix, end: prefix + "\uffff" }).map((e) => JSON.parse(e.value.toString()) as Ev)];
    return { count: events.length, body: JSON.stringify({ items: events, nextCursor: null }) };
  }

  reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    return durably(this.#db, () => {
      const stream = `${p}\0${s}\0~\0e\0`;
      let seq = 0;
      for (const k of this.#db.getKeys({ start: stream + "\uffff", end: stream, reverse: true, limit: 1 })) seq = Number(k.slice(stream.length));
      this.#db.putSync(stream + pad(seq + 1), Buffer.from(JSON.stringify({ type: "ordering_set", at: new Date().toISOString(), data: {}, ordering })));
    });
  }

  deleteProject(p: string): Promise<void> {
    return durably(this.#db, () => void removePrefix(this.#db, `${p}\0`));
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
