/** What the profiling drivers of the 50-writer create start from: a fresh LMDB directory holding project p1 with the empty subproject w. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { FlowstorePeer } from "../peers/flowstore.js";
import { subproject } from "../tree.js";

export async function freshSubproject(prefix: string): Promise<{ dir: string; kv: LmdbKv; fs: FlowstorePeer }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const kv = LmdbKv.open(dir);
  const fs = new FlowstorePeer(kv);
  await fs.load({ projects: [{ id: "p1", subprojects: [subproject("w", 0)] }], updates: [] });
  return { dir, kv, fs };
}
