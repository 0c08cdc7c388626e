import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { openStore, SYSTEM, userActor, ValidationError } from "../src/index.js";

it("openStore gives the typed APIs over LMDB, and the data survives a reopen", async () => {
  const dir = mkdtempSync(join(tmpdir(), "flowstore-index-"));
  try {
    const mary = userActor("mary");
    let fs = await openStore(`lmdb:${dir}`);
    await fs.resources.global.grant(SYSTEM, "global.createProject", "mary");
    await fs.workflow.createProject(mary, { id: "p", displayName: "P" });
    await fs.workflow.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
    await fs.tenancy.create(SYSTEM, "space", null, { name: "space" }, { id: "sp" });
    await fs.close();
    fs = await openStore(dir);
    expect((await fs.workflow.projectDetails(mary, "p")).subprojects.items.map((s) => s.id)).toEqual(["s"]);
    expect((await fs.tenancy.get(SYSTEM, { type: "space", ids: ["sp"] })).data.name).toBe("space");
    expect((await fs.resources.verify(["project", "p"])).ok).toBe(true);
    await fs.close();
    await expect(openStore("ftp://nope")).rejects.toBeInstanceOf(ValidationError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
