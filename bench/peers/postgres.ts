/**
 * PostgreSQL through pg with the same normalized schema as the SQLite peer (its own schema, dropped at
 * close). Commits are durable by PostgreSQL's defaults (synchronous_commit on, fsync on), set explicitly
 * on the connection. `PG_URL` names the server: bench/servers.ts sets it to a throwaway cluster of the run
 * when it is not given (else postgres://postgres@127.0.0.1:5432/test).
 */
import pg from "pg";
import { createdAtOf, viewersOf, type Peer } from "./peer.js";
import { ITEM_COLUMNS, itemOf, SQL_SCHEMA, VIEW_INTENTS, type ItemRow } from "./sqlite.js";
import { MARY, type Tree } from "../tree.js";

/** The peer's server, read when connecting (bench/servers.ts may set it after this module loaded). */
export const pgUrl = (): string => process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Connects, durable commits asked for explicitly, or says why not (the bench then prints the row as skipped). */
export async function connectPostgres(): Promise<pg.Client | string> {
  const url = pgUrl();
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("SET synchronous_commit = on");
    return client;
  } catch (e) {
    await client.end().catch(() => undefined);
    return `PostgreSQL not reachable at ${url.replace(/\/\/[^@/]*@/, "//")}: ${(e as Error).message}`;
  }
}

async function insertMany(c: pg.Client, table: string, columns: string[], rows: unknown[][]): Promise<void> {
  const per = Math.floor(30_000 / columns.length);
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    const values = chunk.map((_, r) => `(${columns.map((_, k) => `$${r * columns.length + k + 1}`).join(", ")})`).join(", ");
    await c.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES ${values}`, chunk.flat());
  }
}

/** The row name says it is durable (a comparison with a peer that does not wait for its WAL flush is not one). */
export const POSTGRES_PEER = "PostgreSQL (pg, normalized, synchronous_commit=on)";

export class PostgresPeer implements Peer {
  readonly name = POSTGRES_PEER;
  readonly schema = `bench_flowstore_${process.pid}`;

  constructor(readonly c: pg.Client) {}

  async load(tree: Tree): Promise<void> {
    const c = this.c;
    await c.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE; CREATE SCHEMA ${this.schema}; SET search_path TO ${this.schema}`);
    await c.query(SQL_SCHEMA.replace("seq INTEGER PRIMARY KEY", "seq BIGSERIAL PRIMARY KEY"));
    const base = Date.now();
    const now = new Date(base).toISOString();
    await c.query("BEGIN");
    for (const p of tree.projects) {
      await c.query("INSERT INTO project VALUES ($1, $2, 'open', $3)", [p.id, `Project ${p.id}`, now]);
      for (const s of p.subprojects) {
        await c.query("INSERT INTO subproject VALUES ($1, $2, $3, $4, 'open', $5)", [p.id, s.id, `Subproject ${s.id}`, s.currency, now]);
        const pos = new Map(s.ordering.map((id, i) => [id, i]));
        const items: unknown[][] = [];
        const perms: unknown[][] = [];
        const events: unknown[][] = [];
        s.items.forEach((it, i) => {
          const d = it.data;
          const at = createdAtOf(base, i);
          items.push([
            p.id,
            s.id,
            d.id,
            d.displayName,
            d.description ?? null,
            "open",
            d.assignee ?? null,
            d.amountType,
            d.amount ?? null,
            d.currency ?? null,
            d.exchangeRate ?? null,
            d.dueDate ?? null,
            at,
            "mary",
            at,
            1,
            pos.get(d.id) ?? null,
          ]);
          for (const who of viewersOf(d.assignee)) for (const intent of VIEW_INTENTS) perms.push([p.id, s.id, d.id, intent, who]);
          events.push([p.id, s.id, d.id, at, "mary", "workflowitem.created", JSON.stringify(d)]);
        });
        await insertMany(c, "workflowitem", ["project_id", "subproject_id", ...ITEM_COLUMNS.split(", "), "position"], items);
        await insertMany(c, "workflowitem_permission", ["project_id", "subproject_id", "item_id", "intent", "identity"], perms);
        await insertMany(c, "event", ["project_id", "subproject_id", "item_id", "at", "actor", "type", "payload"], events);
      }
    }
    for (const u of tree.updates) await this.#update(u.p, u.s, u.w, u.patch);
    await c.query("COMMIT");
    await c.query("ANALYZE");
  }

  async #update(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    const r = await this.c.query("SELECT status FROM workflowitem WHERE project_id = $1 AND subproject_id = $2 AND id = $3 FOR UPDATE", [p, s, w]);
    if (r.rows[0]?.status !== "open") throw new Error("not updatable");
    const at = new Date().toISOString();
    await this.c.query("UPDATE workflowitem SET description = $1, updated_at = $2, version = version + 1 WHERE project_id = $3 AND subproject_id = $4 AND id = $5", [
      patch.description,
      at,
      p,
      s,
      w,
    ]);
    await this.c.query("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES ($1, $2, $3, $4, 'mary', 'workflowitem.updated', $5)", [
      p,
      s,
      w,
      at,
      JSON.stringify(patch),
    ]);
  }

  async getItem(p: string, s: string, w: string): Promise<string> {
    const r = await this.c.query({ name: "get", text: `SELECT ${ITEM_COLUMNS} FROM workflowitem w WHERE project_id = $1 AND subproject_id = $2 AND id = $3`, values: [p, s, w] });
    if (!r.rows[0]) throw new Error("missing");
    return JSON.stringify(itemOf(r.rows[0] as ItemRow));
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: string }> {
    const r = await this.c.query({
      name: "list",
      text: `SELECT ${ITEM_COLUMNS}, EXISTS (SELECT 1 FROM workflowitem_permission p WHERE p.project_id = w.project_id AND p.subproject_id = w.subproject_id AND p.item_id = w.id
        AND p.intent IN ('workflowitem.list', 'workflowitem.viewDetails') AND p.identity IN ($1, $2)) AS visible
        FROM workflowitem w WHERE project_id = $3 AND subproject_id = $4 ORDER BY position NULLS LAST, created_at, id`,
      values: [MARY.id, MARY.groups[0], p, s],
    });
    return { count: r.rows.length, body: JSON.stringify({ items: (r.rows as ItemRow[]).map(itemOf), nextCursor: null }) };
  }

  async updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    await this.c.query("BEGIN");
    try {
      await this.#update(p, s, w, patch);
      await this.c.query("COMMIT");
    } catch (e) {
      await this.c.query("ROLLBACK");
      throw e;
    }
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: string }> {
    const r = await this.c.query({
      name: "history",
      text: "SELECT seq, at, actor, type, payload FROM event WHERE project_id = $1 AND subproject_id = $2 AND item_id = $3 ORDER BY seq",
      values: [p, s, w],
    });
    const items = r.rows.map((x: { seq: string; at: string; actor: string; type: string; payload: string }) => ({
      seq: Number(x.seq),
      at: x.at,
      actor: x.actor,
      type: x.type,
      payload: JSON.parse(x.payload),
    }));
    return { count: items.length, body: JSON.stringify({ items, nextCursor: null }) };
  }

  async reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    const c = this.c;
    await c.query("BEGIN");
    try {
      await c.query("UPDATE workflowitem SET position = NULL WHERE project_id = $1 AND subproject_id = $2 AND position IS NOT NULL", [p, s]);
      // one statement for the whole ordering (unnest), as a careful engineer would write it
      const r = await c.query(
        "UPDATE workflowitem w SET position = o.pos FROM unnest($3::text[]) WITH ORDINALITY AS o(id, pos) WHERE w.project_id = $1 AND w.subproject_id = $2 AND w.id = o.id",
        [p, s, ordering],
      );
      if (r.rowCount !== ordering.length) throw new Error("ordering names an id that is not a child");
      await c.query("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES ($1, $2, NULL, $3, 'mary', 'subproject.ordering_set', $4)", [
        p,
        s,
        new Date().toISOString(),
        JSON.stringify(ordering),
      ]);
      await c.query("COMMIT");
    } catch (e) {
      await c.query("ROLLBACK");
      throw e;
    }
  }

  async deleteProject(p: string): Promise<void> {
    await this.c.query("DELETE FROM project WHERE id = $1", [p]);
  }

  async close(): Promise<void> {
    await this.c.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`).catch(() => undefined);
    await this.c.end();
  }
}
