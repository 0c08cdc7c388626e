/**
 * The real `flowstore erase-subject <id>` on an LMDB store (issue 26, part 2): it prints the receipt, the
 * subject's personal fields then read as erased, and the real `flowstore verify` passes; a subject with
 * no personal data stored is refused (exit 2). An export taken after the erasure carries it into the
 * store it is imported into: that store's register of erasures (kept on restore) holds the receipt, so a
 * restore there (a real server's) of an export taken before the erasure does not bring the key back.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { scanAll } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { registerLayout } from "../../src/personal/subjects.js";
import { layout } from "../../src/resources/model/layout.js";
import { ERASED_TEXT, ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { tempDir } from "../support/temp-dir.js";
import { openFlowstore } from "../../src/compose/index.js";
import { raw, ROOT_PASSWORD, startServer } from "../http/harness.js";
import { run } from "./spawn.js";

const W = { type: "workflowitem" as const, ids: ["p", "s", "w"] };

/** A fresh store directory per case (test/support/temp-dir.ts). */
const tmp = tempDir("cli-erasure", "each");
/** Where the export goes, and the store it is imported into. */
const elsewhere = tempDir("cli-erasure-import", "each");

describe("flowstore erase-subject", () => {
  it("erases a subject's personal data, prints the receipt, and the store still verifies", async () => {
    let kv = LmdbKv.open(tmp());
    try {
      const wf = new Workflow(new ResourceStore(kv, workflowSchema));
      await wf.createProject(SYSTEM, { id: "p", displayName: "Grants" });
      await wf.createSubproject(SYSTEM, "p", { id: "s", displayName: "Fund", currency: "EUR" });
      await wf.createWorkflowitem(SYSTEM, "p", "s", { id: "w", displayName: "Grant", amountType: "N/A", dataSubject: "anna", description: "Anna Schmidt" });
      expect((await wf.store.reads.get(SYSTEM, W)).data.description).toBe("Anna Schmidt");
      // A root user, so that a server may restore this store's export (below).
      const fs = await openFlowstore(kv);
      await fs.identity.ensureRoot(ROOT_PASSWORD);
      await fs.close();
    } finally {
      await kv.close();
    }

    // An export from before the erasure: it holds anna's key.
    const pre = join(elsewhere(), "pre.ndjson");
    const preExported = run(["export", "--out", pre, "--data", tmp()]);
    expect((await preExported.exit).code, preExported.err()).toBe(0);

    const unknown = run(["erase-subject", "nobody", "--data", tmp()]);
    expect((await unknown.exit).code, unknown.err()).toBe(2);
    const erased = run(["erase-subject", "anna", "--data", tmp()]);
    expect((await erased.exit).code, erased.err()).toBe(0);
    const receipt = JSON.parse(erased.out());
    expect(receipt).toMatchObject({ subject: "anna", erasedBy: "system", complete: true, resources: [{ type: "workflowitem", ids: ["p", "s", "w"], event: { seq: 4 } }] });

    const verify = run(["verify", "--data", tmp()]);
    expect((await verify.exit).code, verify.out() + verify.err()).toBe(0);

    kv = LmdbKv.open(tmp());
    try {
      const store = new ResourceStore(kv, workflowSchema);
      expect((await store.reads.get(SYSTEM, W)).data).toMatchObject({ description: ERASED_TEXT, dataSubject: "anna" });
    } finally {
      await kv.close();
    }

    const file = join(elsewhere(), "export.ndjson");
    const exported = run(["export", "--out", file, "--data", tmp()]);
    expect((await exported.exit).code, exported.err()).toBe(0);
    const other = join(elsewhere(), "store");
    const imported = run(["import", "--in", file, "--data", other]);
    expect((await imported.exit).code, imported.err()).toBe(0);
    kv = LmdbKv.open(other);
    try {
      const registered = [];
      for await (const e of scanAll(kv, registerLayout.partition, { prefix: registerLayout.prefix })) registered.push(JSON.parse(e.value.toString("utf8")));
      expect(registered).toEqual([receipt]);
      expect(await kv.get(layout.subject("anna"), layout.subjectKey)).toBeUndefined();
      expect((await new ResourceStore(kv, workflowSchema).reads.get(SYSTEM, W)).data.description).toBe(ERASED_TEXT);
    } finally {
      await kv.close();
    }

    // That store restores the export from before the erasure (a real server's restore): the key it
    // brings is deleted again before the store is served, as the register the import carried says.
    kv = LmdbKv.open(other);
    const s = await startServer(kv, { webRoot: false });
    try {
      const restored = await raw(s.base, "POST", "/api/v1/store/restore", {
        headers: { authorization: `Bearer ${s.root.token}`, "content-type": "application/gzip" },
        body: gzipSync(readFileSync(pre)),
      });
      expect(restored.status, JSON.stringify(restored.body)).toBe(200);
      expect(await kv.get(layout.subject("anna"), layout.subjectKey)).toBeUndefined();
      const registered = [];
      for await (const e of scanAll(kv, registerLayout.partition, { prefix: registerLayout.prefix })) registered.push(JSON.parse(e.value.toString("utf8")));
      expect(registered).toEqual([receipt]);
      expect((await s.app.flowstore.resources.reads.get(SYSTEM, W)).data.description).toBe(ERASED_TEXT);
    } finally {
      await s.close();
      await kv.close();
    }
  });
});
