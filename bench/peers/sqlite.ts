/**
 * SQLite through better-sqlite3 with a normalized schema, as a competent engineer would write it:
 * a table per level, typed columns, the manual ordering as a position column, permissions in their own
 * table, the history in an event table indexed by resource, foreign keys with ON DELETE CASCADE.
 * WAL with synchronous=FULL: a committed write is on disk (the durability flowstore gives).
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { createdAtOf, viewersOf, type Peer } from "./peer.js";
import { MARY, type Tree } from "../tree.js";

export const SQL_SCHEMA = `
CREATE TABLE project (id TEXT PRIMARY KEY, display_name TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE subproject (
  project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE, id TEXT NOT NULL,
  display_name TEXT NOT NULL, currency TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (project_id, id));
CREATE TABLE workflowitem (
  project_id TEXT NOT NULL, subproject_id TEXT NOT NULL, id TEXT NOT NULL,
  display_name TEXT NOT NULL, description TEXT, status TEXT NOT NULL, assignee TEXT,
  amount_type TEXT NOT NULL, amount TEXT, currency TEXT, exchange_rate TEXT, due_date TEXT,
  created_at TEXT NOT NULL, created_by TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL,
  position INTEGER,
  PRIMARY KEY (project_id, subproject_id, id),
  FOREIGN KEY (project_id, subproject_id) REFERENCES subproject(project_id, id) ON DELETE CASCADE);
CREATE INDEX workflowitem_order ON workflowitem (project_id, subproject_id, position, created_at, id);
CREATE TABLE workflowitem_permission (
  project_id TEXT NOT NULL, subproject_id TEXT NOT NULL, item_id TEXT NOT NULL, intent TEXT NOT NULL, identity TEXT NOT NULL,
  PRIMARY KEY (project_id, subproject_id, item_id, intent, identity),
  FOREIGN KEY (project_id, subproject_id, item_id) REFERENCES workflowitem(project_id, subproject_id, id) ON DELETE CASCADE);
CREATE TABLE event (
  seq INTEGER PRIMARY KEY, project_id TEXT NOT NULL, subproject_id TEXT, item_id TEXT,
  at TEXT NOT NULL, actor TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX event_by_resource ON event (project_id, subproject_id, item_id, seq);
`;

export interface ItemRow {
  id: string;
  display_name: string;
  description: string | null;
  status: string;
  assignee: string | null;
  amount_type: string;
  amount: string | null;
  currency: string | null;
  exchange_rate: string | null;
  due_date: string | null;
  created_at: string;
  created_by: string;
  updated_at: string;
  version: number;
  visible?: number | boolean;
}

/** Row → the public JSON shape (redacted when not visible), as an API handler would build it. */
export function itemOf(r: ItemRow): object {
  if (r.visible === 0 || r.visible === false) return { id: r.id, type: "workflowitem", redacted: true, data: { status: r.status }, meta: { createdAt: r.created_at } };
  const data: Record<string, unknown> = { displayName: r.display_name, status: r.status, amountType: r.amount_type };
  if (r.description !== null) data.description = r.description;
  if (r.assignee !== null) data.assignee = r.assignee;
  if (r.amount !== null) data.amount = r.amount;
  if (r.currency !== null) data.currency = r.currency;
  if (r.exchange_rate !== null) data.exchangeRate = r.exchange_rate;
  if (r.due_date !== null) data.dueDate = r.due_date;
  return { id: r.id, type: "workflowitem", data, meta: { createdAt: r.created_at, createdBy: r.created_by, updatedAt: r.updated_at, version: Number(r.version) } };
}

export const VIEW_INTENTS = ["workflowitem.list", "workflowitem.viewDetails"];
/** Held by a workflowitem's creator (as in flowstore, where the creator holds every intent): checked by the HTTP peer's update. */
export const UPDATE_INTENT = "workflowitem.update";

export const ITEM_COLUMNS = "id, display_name, description, status, assignee, amount_type, amount, currency, exchange_rate, due_date, created_at, created_by, updated_at, version";

/** Opens (creating) a SQLite file with the schema and the durable settings. */
export function openSqlite(file: string): Database.Database {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("foreign_keys = ON");
  return db;
}

export function loadSqlite(db: Database.Database, tree: Tree): void {
  if (!db.prepare("SELECT name FROM sqlite_master WHERE name = 'project'").get()) db.exec(SQL_SCHEMA);
  const base = Date.now();
  const insP = db.prepare("INSERT INTO project VALUES (?, ?, 'open', ?)");
  const insS = db.prepare("INSERT INTO subproject VALUES (?, ?, ?, ?, 'open', ?)");
  const insW = db.prepare(`INSERT INTO workflowitem (project_id, subproject_id, ${ITEM_COLUMNS}, position) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, 'mary', ?, 1, ?)`);
  const insPerm = db.prepare("INSERT INTO workflowitem_permission VALUES (?, ?, ?, ?, ?)");
  const insE = db.prepare("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES (?, ?, ?, ?, 'mary', ?, ?)");
  const now = new Date(base).toISOString();
  db.transaction(() => {
    for (const p of tree.projects) {
      insP.run(p.id, `Project ${p.id}`, now);
      for (const s of p.subprojects) {
        insS.run(p.id, s.id, `Subproject ${s.id}`, s.currency, now);
        const pos = new Map(s.ordering.map((id, i) => [id, i]));
        s.items.forEach((it, i) => {
          const d = it.data;
          const at = createdAtOf(base, i);
          insW.run(
            p.id,
            s.id,
            d.id,
            d.displayName,
            d.description ?? null,
            d.assignee ?? null,
            d.amountType,
            d.amount ?? null,
            d.currency ?? null,
            d.exchangeRate ?? null,
            d.dueDate ?? null,
            at,
            at,
            pos.get(d.id) ?? null,
          );
          for (const who of viewersOf(d.assignee)) for (const intent of VIEW_INTENTS) insPerm.run(p.id, s.id, d.id, intent, who);
          insPerm.run(p.id, s.id, d.id, UPDATE_INTENT, "mary");
          insE.run(p.id, s.id, d.id, at, "workflowitem.created", JSON.stringify(d));
        });
      }
    }
  })();
  const upd = updater(db);
  db.transaction(() => {
    for (const u of tree.updates) upd(u.p, u.s, u.w, u.patch);
  })();
}

/** A durable update of a workflowitem's description with its event (in the caller's transaction). */
export function updater(db: Database.Database) {
  const read = db.prepare("SELECT status FROM workflowitem WHERE project_id = ? AND subproject_id = ? AND id = ?");
  const write = db.prepare("UPDATE workflowitem SET description = ?, updated_at = ?, version = version + 1 WHERE project_id = ? AND subproject_id = ? AND id = ?");
  const insE = db.prepare("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES (?, ?, ?, ?, 'mary', 'workflowitem.updated', ?)");
  return (p: string, s: string, w: string, patch: { description: string }) => {
    const row = read.get(p, s, w) as { status: string } | undefined;
    if (!row || row.status !== "open") throw new Error("not updatable");
    const at = new Date().toISOString();
    write.run(patch.description, at, p, s, w);
    insE.run(p, s, w, at, JSON.stringify(patch));
  };
}

/** A durable replacement of a subproject's ordering with its event (in the caller's transaction). */
export function reorderer(db: Database.Database) {
  const clear = db.prepare("UPDATE workflowitem SET position = NULL WHERE project_id = ? AND subproject_id = ? AND position IS NOT NULL");
  const set = db.prepare("UPDATE workflowitem SET position = ? WHERE project_id = ? AND subproject_id = ? AND id = ?");
  const insE = db.prepare("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES (?, ?, NULL, ?, 'mary', 'subproject.ordering_set', ?)");
  return (p: string, s: string, ordering: readonly string[]) => {
    clear.run(p, s);
    ordering.forEach((id, i) => {
      if (set.run(i, p, s, id).changes !== 1) throw new Error(`ordering names ${id}, not a child`);
    });
    insE.run(p, s, new Date().toISOString(), JSON.stringify(ordering));
  };
}

function statements(db: Database.Database) {
  const visible = `EXISTS (SELECT 1 FROM workflowitem_permission p WHERE p.project_id = w.project_id AND p.subproject_id = w.subproject_id AND p.item_id = w.id
    AND p.intent IN ('workflowitem.list', 'workflowitem.viewDetails') AND p.identity IN (?, ?)) AS visible`;
  const upd = updater(db);
  return {
    get: db.prepare(`SELECT ${ITEM_COLUMNS} FROM workflowitem w WHERE project_id = ? AND subproject_id = ? AND id = ?`),
    list: db.prepare(`SELECT ${ITEM_COLUMNS}, ${visible} FROM workflowitem w WHERE project_id = ? AND subproject_id = ? ORDER BY position IS NULL, position, created_at, id`),
    update: db.transaction(upd),
    history: db.prepare("SELECT seq, at, actor, type, payload FROM event WHERE project_id = ? AND subproject_id = ? AND item_id = ? ORDER BY seq"),
    reorder: db.transaction(reorderer(db)),
    del: db.prepare("DELETE FROM project WHERE id = ?"),
  };
}

export class SqlitePeer implements Peer {
  readonly name = "SQLite (better-sqlite3, normalized, synchronous=FULL)";
  readonly db: Database.Database;
  #stmts!: ReturnType<typeof statements>;

  constructor(dir: string) {
    this.db = openSqlite(join(dir, "peer.db"));
  }

  async load(tree: Tree): Promise<void> {
    loadSqlite(this.db, tree);
    this.#stmts = statements(this.db);
  }

  async getItem(p: string, s: string, w: string): Promise<string> {
    const r = this.#stmts.get.get(p, s, w) as ItemRow | undefined;
    if (!r) throw new Error("missing");
    return JSON.stringify(itemOf(r));
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: string }> {
    const rows = this.#stmts.list.all(MARY.id, MARY.groups[0], p, s) as ItemRow[];
    return { count: rows.length, body: JSON.stringify({ items: rows.map(itemOf), nextCursor: null }) };
  }

  async updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    this.#stmts.update(p, s, w, patch);
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: string }> {
    const rows = this.#stmts.history.all(p, s, w) as { seq: number; at: string; actor: string; type: string; payload: string }[];
    const items = rows.map((r) => ({ seq: r.seq, at: r.at, actor: r.actor, type: r.type, payload: JSON.parse(r.payload) }));
    return { count: items.length, body: JSON.stringify({ items, nextCursor: null }) };
  }

  async reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    this.#stmts.reorder(p, s, ordering);
  }

  async deleteProject(p: string): Promise<void> {
    this.#stmts.del.run(p);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
