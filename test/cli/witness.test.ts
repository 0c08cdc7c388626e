/**
 * The real `flowstore witness` process against a server over HTTP: `--once` cosigns (exit 0, its
 * verifier key printed, the server keeps the cosignature); after the server's log is truncated, the
 * next run refuses with exit code 4 (EXIT.witnessRefused) and its LMDB state keeps the evidence; its
 * metrics file (Prometheus text) shows the size it cosigned, then `flowstore_witness_refused 1`.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EXIT } from "../../src/cli/exit.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { TLOG } from "../../src/tlog/log.js";
import { checkSignatures, parseNote, parseVkey } from "../../src/tlog/note.js";
import { startLmdbServer, type Running } from "../http/harness.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

let s: Running;
let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("witness-cli");
  s = await startLmdbServer("witness-cli-server");
});
afterEach(async () => {
  await s.close();
  await removeTempDir(dir);
});

it("cosigns, then refuses a truncated log with exit code 4 and keeps the evidence", async () => {
  await s.root.projects.create({ id: "p1", displayName: "Schools" });
  await s.app.flowstore.log.tree.appendPending();
  const logKey = (await s.root.log.info()).vkey;
  const args = [
    "witness",
    "--once",
    "--log",
    s.base,
    "--log-key",
    logKey,
    "--key",
    join(dir, "witness.pem"),
    "--state",
    join(dir, "state"),
    "--name",
    "witness.example/cli",
    "--metrics-file",
    join(dir, "witness.prom"),
  ];
  const first = run(args);
  const { code } = await first.exit;
  expect(code, first.err()).toBe(EXIT.ok);
  const lines = first
    .out()
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines[0]).toMatchObject({ witness: "witness.example/cli" });
  expect(lines[1]).toMatchObject({ outcome: "cosigned" });
  const vkey = lines[0]!.vkey as string;
  expect(parseVkey(vkey).type).toBe(0x04);
  const cosignedSize = (lines[1] as { size: number }).size;
  const metrics = await readFile(join(dir, "witness.prom"), "utf8");
  expect(metrics).toMatch(/^flowstore_witness_refused 0$/m);
  expect(metrics).toMatch(new RegExp(`^flowstore_witness_cosigned_size ${cosignedSize}$`, "m"));
  expect(metrics).toMatch(/^flowstore_witness_steps_total\{outcome="cosigned"\} 1$/m);

  // Truncated: the tree is dropped, so the server serves a log of size 0.
  await s.app.flowstore.kv.dropPartition(TLOG.partition());
  const second = run(args);
  expect((await second.exit).code, second.err()).toBe(EXIT.witnessRefused);
  expect(second.out()).toMatch(/"outcome":"inconsistent"/);
  expect(await readFile(join(dir, "witness.prom"), "utf8")).toMatch(/^flowstore_witness_refused 1$/m);
  const state = LmdbKv.open(join(dir, "state"));
  try {
    const page = await state.scan(["witness"], { prefix: ["evidence"] });
    expect(page.entries).toHaveLength(1);
    const kept = JSON.parse((await state.get(["witness"], ["log", parseVkey(logKey).name]))!.value.toString("utf8")) as { note: string };
    expect(checkSignatures(parseNote(kept.note), parseVkey(vkey)).good).toHaveLength(1);
  } finally {
    await state.close();
  }
});
