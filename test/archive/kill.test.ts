/**
 * A process killed with SIGKILL in the middle of archiving a file leaves staged chunks and a journal
 * entry behind; the recovery sweep of the next process removes them, and what was archived before is
 * intact. Runs on LMDB (a store that outlives the process).
 */
import { SYSTEM } from "../../src/access/actor.js";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Archive } from "../../src/archive/index.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { countEntries, dump, sha256Of } from "./helpers.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const fixture = fileURLToPath(new URL("./fixtures/kill-writer.ts", import.meta.url));

describe("archive: recovery after SIGKILL mid-write (lmdb)", () => {
  it("removes the killed write's staging and journal, keeps everything else", async () => {
    const dir = makeTempDirSync("archive-kill");
    try {
      const child = spawn(process.execPath, ["--import", "tsx", fixture, dir], { stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
      // Kill once the endless file has streamed 5 MiB (chunks are committed behind it).
      await new Promise<void>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
          if (/^sent 5$/m.test(out)) resolve();
        });
        child.on("exit", () => reject(new Error(`the writer exited before it was killed: ${stderr}`)));
      });
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");

      const kv = LmdbKv.open(dir);
      try {
        // The kill left the write half-done: a journal entry and staged chunks.
        expect(await countEntries(kv, "archive-journal")).toBe(1);
        expect(await countEntries(kv, "archive-chunks", (k) => typeof k[0] === "number")).toBeGreaterThan(2 + 1);
        const archive = new Archive(kv);
        const report = await archive.recover();
        expect(report.uploadsRolledBack).toBe(1);
        const [keep] = (await archive.findSnapshotsByUniqueId(SYSTEM, "keep")).items;
        const sha = (await archive.read(SYSTEM, keep!.id)).files[0]!.sha256;
        // Exactly the kept snapshot remains: its header and document, its date entry, its file and chunks.
        const left = await dump(kv);
        expect(left.filter((l) => l.startsWith('["archive-chunks"'))).toHaveLength(1);
        expect(left.filter((l) => l.startsWith('["archive-journal"'))).toEqual([]);
        expect(left.filter((l) => l.startsWith('["archive",'))).toEqual(['["archive","keep"]: 3']);
        expect(left.filter((l) => l.startsWith('["archive-file"'))).toEqual([`["archive-file","${sha}"]: 2`]);
        expect(JSON.parse((await kv.get(["archive-file", sha], ["meta"]))!.value.toString()).refs).toBe(1);
        expect((await archive.findSnapshotsByUniqueId(SYSTEM, "killed")).items).toEqual([]);
        expect(await sha256Of((await archive.openFile(SYSTEM, keep!.id, "k.bin")).stream)).toEqual({ sha256: sha, size: 1536 * 1024 });
        // A second sweep has nothing left to do.
        expect(await archive.recover()).toEqual({ uploadsRolledBack: 0, uploadsCompleted: 0, deletesCompleted: 0, deletesAbandoned: 0, freesCompleted: 0 });
        await archive.delete(SYSTEM, keep!.id);
        expect(await dump(kv)).toEqual([]);
      } finally {
        await kv.close();
      }
    } finally {
      removeTempDirSync(dir);
    }
  });
});
