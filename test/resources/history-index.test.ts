/**
 * The history index carries each event's bytes (issue 25): a history page is one range read of it. Its
 * entries are held to the log by verify (an entry whose bytes differ from its event fails, naming it);
 * a store written before the entries carried their events (empty entries) is served the same history,
 * byte for byte, from the log, and still verifies; a partition dump round-trips either kind.
 */
import { Readable } from "node:stream";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { scanAll, type Entry, type Op } from "../../src/kv/contract.js";
import { families, layout } from "../../src/resources/model/layout.js";
import { locate } from "../../src/resources/model/ref.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { rewriteFrom } from "../support/rechain.js";

const P = ["project", "demo-1"];
const wi = subprojectRef("demo-1", "sp-1");
const NAMES = { field: "projectId" };

/** The body the HTTP route joins (`historyJson`), every page of it, as text. */
async function historyText(wf: Workflow, options: { reverse?: boolean; limit?: number } = {}): Promise<string> {
  const pages: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: Buffer[]; nextCursor: string | null } = await wf.historyJson(SYSTEM, wi, { ...options, cursor });
    pages.push(page.items.map((b) => b.toString("utf8")).join(","));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return pages.join("|");
}

forEachBackend((backend) => {
  let h: BackendHandle;
  let wf: Workflow;
  beforeEach(async () => {
    h = await backend.create();
    wf = new Workflow(new ResourceStore(h.kv, workflowSchema));
    await wf.createProject(SYSTEM, { id: "demo-1", displayName: "School" });
    await wf.createSubproject(SYSTEM, "demo-1", { id: "sp-1", displayName: "Roof", currency: "EUR" });
    for (let i = 0; i < 5; i++) await wf.update(SYSTEM, wi, { description: `Revision ${i}` });
    await wf.grant(SYSTEM, wi, "subproject.viewHistory", "vera");
    await wf.createWorkflowitem(SYSTEM, "demo-1", "sp-1", { id: "w1", displayName: "Tiles", amountType: "N/A" });
  });
  afterEach(async () => h.destroy());

  it("each history index entry holds its event's bytes, as the log does", async () => {
    const l = locate(workflowSchema, wi);
    const entries = (await h.kv.scan(P, { prefix: layout.history(l) })).entries;
    expect(entries.length).toBeGreaterThan(5);
    for (const e of entries) {
      const log = await h.kv.get(P, layout.log(layout.seqOfHistory(e.key)));
      expect(e.value.equals(log!.value)).toBe(true);
    }
  });

  it("empty entries (a store from before) serve the same history, page by page and reversed, and verify", async () => {
    const asWritten = [await historyText(wf), await historyText(wf, { limit: 2 }), await historyText(wf, { reverse: true, limit: 3 })];
    const parsed = await wf.history(SYSTEM, wi, { diff: true });
    // Every other entry of the partition emptied, as an older store left them all: pages mix both kinds.
    const emptied: Op[] = [];
    let i = 0;
    for await (const e of scanAll(h.kv, P, { prefix: families.h.pack([]) })) if (i++ % 2 === 0) emptied.push({ type: "put", key: e.key, value: Buffer.alloc(0) });
    expect(emptied.length).toBeGreaterThan(4);
    await h.kv.commit(P, emptied);
    expect([await historyText(wf), await historyText(wf, { limit: 2 }), await historyText(wf, { reverse: true, limit: 3 })]).toEqual(asWritten);
    expect(await wf.history(SYSTEM, wi, { diff: true })).toEqual(parsed);
    expect(await wf.store.audit.verify(P)).toMatchObject({ ok: true });
  });

  /**
   * Puts into the item's first history entry another event's bytes (valid JSON, a real event of the
   * partition), then an edited copy of its own: verify fails on each, naming that entry. Answers the entry.
   */
  async function foreignBytesFail(): Promise<Entry> {
    const l = locate(workflowSchema, wi);
    const [first, second] = (await h.kv.scan(P, { prefix: layout.history(l), limit: 2 })).entries;
    for (const value of [second!.value, Buffer.from(first!.value.toString("utf8").replace('"actor":"', '"actor":"x'))]) {
      await h.kv.commit(P, [{ type: "put", key: first!.key, value }]);
      const r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "h", key: JSON.stringify(first!.key) } });
      expect(r.firstBad!.reason).toContain("history index entry");
    }
    return first!;
  }

  it("an entry whose bytes are not its event's fails verify, naming it", async () => {
    const first = await foreignBytesFail();
    await h.kv.commit(P, [{ type: "put", key: first.key, value: first.value }]);
    expect(await wf.store.audit.verify(P)).toMatchObject({ ok: true });
  });

  it("entries holding events hashed over their canonical JSON (an older store's) are held to their bytes too", async () => {
    // The whole log sealed again as stores before stored-bytes hashes did, each entry carrying its event's bytes:
    // verify holds those entries to a digest of the event (the hash is not over the stored bytes).
    await rewriteFrom(h.kv, P, 1, () => {});
    expect(await wf.store.audit.verify(P)).toMatchObject({ ok: true });
    const first = await foreignBytesFail();
    await h.kv.commit(P, [{ type: "put", key: first.key, value: Buffer.alloc(0) }]);
    expect(await wf.store.audit.verify(P)).toMatchObject({ ok: true });
  });

  it("a partition dump round-trips, with entries holding events and with empty ones", async () => {
    for (const legacy of [false, true]) {
      if (legacy) {
        const emptied: Op[] = [];
        for await (const e of scanAll(h.kv, P, { prefix: families.h.pack([]) })) emptied.push({ type: "put", key: e.key, value: Buffer.alloc(0) });
        await h.kv.commit(P, emptied);
      }
      const before: string[] = [];
      for await (const e of scanAll(h.kv, P)) if (e.key[0] !== "m") before.push(`${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
      const history = await historyText(wf);
      const dump = await wf.store.dumps.dump(projectRef("demo-1"), NAMES);
      const pieces: Buffer[] = [];
      for await (const piece of dump.content) pieces.push(piece);
      await h.kv.dropPartition(P);
      const restored = await wf.store.dumps.restore(projectRef("demo-1"), { counts: dump.counts, head: dump.head, open: async () => Readable.from(pieces) }, NAMES);
      expect(restored.verify).toMatchObject({ ok: true });
      const after: string[] = [];
      for await (const e of scanAll(h.kv, P)) if (e.key[0] !== "m") after.push(`${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
      expect(after).toEqual(before);
      expect(await historyText(wf)).toBe(history);
    }
  });

  it("a dump whose history entry is no event is refused", async () => {
    const l = locate(workflowSchema, wi);
    const first = (await h.kv.scan(P, { prefix: layout.history(l), limit: 1 })).entries[0]!;
    await h.kv.commit(P, [{ type: "put", key: first.key, value: Buffer.from("not an event") }]);
    const dump = await wf.store.dumps.dump(projectRef("demo-1"), NAMES);
    const pieces: Buffer[] = [];
    for await (const piece of dump.content) pieces.push(piece);
    await h.kv.dropPartition(P);
    await expect(wf.store.dumps.restore(projectRef("demo-1"), { counts: dump.counts, head: dump.head, open: async () => Readable.from(pieces) }, NAMES)).rejects.toThrow(
      /a history entry that is no event/,
    );
  });
});
