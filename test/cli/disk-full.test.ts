/**
 * Disk full (issue 16): a real `flowstore serve` process over LMDB, under a file size limit
 * (`ulimit -f`, so LMDB's writes fail with EFBIG as they would with ENOSPC on a full disk), is written
 * to until a commit fails. The failed write answers 507 problem+json; the server keeps running and
 * serving reads; every acknowledged write is there and verifies, the refused one is not (nothing half
 * applied); `flowstore verify` passes; and once the limit is lifted, the same write succeeds.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, expect, it } from "vitest";
import { FlowstoreClient } from "../../src/client/index.js";
import { freePort } from "../support/ports.js";
import { CLI, ROOT, run, waitHealthy, type Run } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

const ROOT_PASSWORD = "root password 1";
/** The largest file the limited server may write: 8 MiB (bash's `ulimit -f` counts KiB). */
const FILE_LIMIT_KIB = 8192;
/** Each create stores its data twice (state record and event): ~0.6 MB a write. */
const BLOB = "x".repeat(300_000);

let dir = "";
const children: Run[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) {
    c.child.kill("SIGKILL");
    await c.exit;
  }
  if (dir) await removeTempDir(dir);
});

/** `flowstore serve` under `ulimit -f` (the same process: bash execs node). */
function serveLimited(data: string, port: number): Run {
  const child = spawn(
    "bash",
    ["-c", `ulimit -f ${FILE_LIMIT_KIB}; exec "$0" "$@"`, process.execPath, ...CLI, "serve", "--port", String(port), "--data", data, "--log-level", "warn"],
    { cwd: ROOT, env: { ...process.env, FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD, FLOWSTORE_JWT_SECRET: "", FLOWSTORE_STORE: "" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on("exit", (code, signal) => res({ code, signal })));
  return { child, out: () => out, err: () => err, exit };
}

it("a write that finds no space answers 507; the server keeps serving, nothing is half applied, verify passes, writes resume", async () => {
  dir = await makeTempDir("disk-full");
  const data = join(dir, "data");
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const limited = serveLimited(data, port);
  children.push(limited);
  await waitHealthy(base, limited);
  const root = new FlowstoreClient({ baseUrl: base });
  await root.login("root", ROOT_PASSWORD);

  const create = (id: string) =>
    fetch(`${base}/api/v1/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${root.token}`, "content-type": "application/json" },
      body: JSON.stringify({ id, displayName: id, additionalData: { blob: BLOB } }),
    });
  const acknowledged: string[] = [];
  let refused: { id: string; status: number; type: string; body: { type: string; status: number; detail: string } } | null = null;
  // 8 MiB hold about 13 such writes; the loop's bound only keeps a broken limit from running forever.
  for (let i = 0; i < 60 && !refused; i++) {
    const id = `p${i}`;
    const res = await create(id);
    if (res.status === 201) acknowledged.push(id);
    else refused = { id, status: res.status, type: res.headers.get("content-type") ?? "", body: (await res.json()) as never };
  }
  expect(refused, "the limit was never reached").not.toBeNull();
  expect(acknowledged.length).toBeGreaterThan(0);
  expect(refused!.status, `${JSON.stringify(refused!.body)} ${limited.err().slice(-3000)} ${limited.out().slice(-3000)}`).toBe(507);
  expect(refused!.type).toContain("application/problem+json");
  expect(refused!.body).toMatchObject({ type: "urn:flowstore:problem:insufficient_storage", status: 507 });

  // Still full: another write is refused the same way, and the process is alive and serving reads.
  expect((await create("again")).status).toBe(507);
  // A restore whose upload the full disk cannot stage is the machine's failure (507), not a bad upload (400).
  const restore = await fetch(`${base}/api/v1/store/restore`, {
    method: "POST",
    headers: { authorization: `Bearer ${root.token}`, "content-type": "application/gzip" },
    body: gzipSync(`${"x".repeat(9 * 1024 * 1024)}\n`),
  });
  expect(restore.status, await restore.clone().text()).toBe(507);
  expect(((await restore.json()) as { type: string }).type).toBe("urn:flowstore:problem:insufficient_storage");
  expect((await fetch(`${base}/health`)).status).toBe(200);
  for (const id of acknowledged) {
    const p = await root.project(id).get();
    expect(p.data.additionalData).toEqual({ blob: BLOB });
    expect(await root.project(id).verify()).toMatchObject({ ok: true });
  }
  expect((await root.projects.list({ limit: 100 })).items.map((p) => p.id).sort()).toEqual([...acknowledged].sort());
  const missing = await fetch(`${base}/api/v1/projects/${refused!.id}`, { headers: { authorization: `Bearer ${root.token}` } });
  expect(missing.status).toBe(404);

  limited.child.kill("SIGTERM");
  expect((await limited.exit).signal ?? "exited").not.toBe("SIGXFSZ");
  children.splice(children.indexOf(limited), 1);

  const verify = run(["verify", "--data", data]);
  const verified = await verify.exit;
  expect(verified.code, verify.err() + verify.out()).toBe(0);

  // Space freed (no limit now): the refused write goes through.
  const free = run(["serve", "--port", String(port), "--data", data, "--log-level", "warn"]);
  children.push(free);
  await waitHealthy(base, free);
  await root.login("root", ROOT_PASSWORD);
  expect((await create(refused!.id)).status).toBe(201);
}, 600_000);
