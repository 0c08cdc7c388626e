/**
 * Opening a page of sealed personal data reads each data subject's partition once for the whole page
 * (personal/subjects.ts `openMany`), not once per item: on Redis and PostgreSQL every read is a round
 * trip. Through a real server on every backend (the count does not depend on the backend; Redis and
 * PostgreSQL are where it matters), the reads of subject partitions counted by a wrapper around the store
 * (the storage contract, passed through), during a list, a history and a pull.
 */
import { expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import type { FlowstoreClient } from "../../src/client/index.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { layout } from "../../src/resources/model/layout.js";
import { ERASED_TEXT } from "../../src/resources/store.js";
import { forEachBackend } from "../conformance/backends.js";
import { raw, startServer } from "./harness.js";

const API = "/api/v1";
const ITEMS = `${API}/projects/p/subprojects/s/workflowitems`;
const SUBJECT_KIND = layout.subject("x")[0];

/** The store, its reads of subject partitions counted (every other call passed through as it is). */
function counted(kv: KvStore): { kv: KvStore; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(kv, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (name === "get" || name === "getMany" || name === "getSync")
        return (partition: Partition, ...rest: unknown[]) => {
          if (partition[0] === SUBJECT_KIND) reads++;
          return (value as (...a: unknown[]) => unknown).call(target, partition, ...rest);
        };
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { kv: proxy, reads: () => reads };
}

forEachBackend((backend) => {
  it("a page of 18 items of two subjects opens with two reads; a history page and a pull with one each", async () => {
    const handle = await backend.create();
    const { kv, reads } = counted(handle.kv);
    const s = await startServer(kv, { webRoot: false });
    try {
      const call = (c: FlowstoreClient, method: string, path: string, body?: unknown) =>
        raw(s.base, method, path, {
          headers: { authorization: `Bearer ${c.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
      await s.root.projects.create({ id: "p", displayName: "Grants" });
      await s.root.project("p").subprojects.create({ id: "s", displayName: "Fund", currency: "EUR", workflowMode: "unordered" });
      const items = s.root.project("p").subproject("s").workflowitems;
      for (let i = 0; i < 12; i++) await items.create({ id: `a${i}`, displayName: `a${i}`, amountType: "N/A", dataSubject: "anna", description: `Anna ${i}` });
      for (let i = 0; i < 4; i++) await items.create({ id: `b${i}`, displayName: `b${i}`, amountType: "N/A", dataSubject: "bert", description: `Bert ${i}` });
      for (let i = 0; i < 2; i++) await items.create({ id: `n${i}`, displayName: `n${i}`, amountType: "N/A", description: `nobody ${i}` });
      const sub = await call(s.root, "POST", `${API}/subscriptions`, { name: "anna's", filter: { path: [{ type: "project", id: "p" }] } });
      expect(sub.status).toBe(201);
      for (let i = 1; i <= 5; i++)
        await s.root
          .project("p")
          .subproject("s")
          .workflowitem("a0")
          .update({ description: `Anna moved ${i}` });

      const described = (list: { data: { description?: string } }[]) => list.map((x) => x.data.description);
      let before = reads();
      const page = await call(s.root, "GET", `${ITEMS}?limit=100`);
      expect(page.status).toBe(200);
      expect(reads() - before).toBe(2);
      expect(described(page.body.items)).toEqual([
        "Anna moved 5",
        ...Array.from({ length: 11 }, (_, i) => `Anna ${i + 1}`),
        ...Array.from({ length: 4 }, (_, i) => `Bert ${i}`),
        "nobody 0",
        "nobody 1",
      ]);

      before = reads();
      const history = await call(s.root, "GET", `${ITEMS}/a0/history?limit=100`);
      expect(history.status).toBe(200);
      expect(reads() - before).toBe(1);
      expect(history.body.items.map((e: { payload: { data?: { description?: string } } }) => e.payload.data?.description).filter(Boolean)).toEqual([
        "Anna 0",
        ...Array.from({ length: 5 }, (_, i) => `Anna moved ${i + 1}`),
      ]);

      // The pull's page: the five updates of one subject's item.
      before = reads();
      const pulled = await call(s.root, "GET", `${API}/subscriptions/${sub.body.subscription.id}/events`);
      expect(pulled.status).toBe(200);
      expect(reads() - before).toBe(1);
      expect(pulled.body.items.map((d: { event: { payload: { data?: { description?: string } } } }) => d.event.payload.data?.description)).toEqual(
        Array.from({ length: 5 }, (_, i) => `Anna moved ${i + 1}`),
      );

      // Erased, bert's items read as erased, and the page is still two reads.
      await s.app.flowstore.eraseSubject(SYSTEM, "bert");
      before = reads();
      const after = await call(s.root, "GET", `${ITEMS}?limit=100`);
      expect(reads() - before).toBe(2);
      expect(described(after.body.items).slice(12, 16)).toEqual([ERASED_TEXT, ERASED_TEXT, ERASED_TEXT, ERASED_TEXT]);
    } finally {
      await s.close();
      await handle.destroy();
    }
  });
});
