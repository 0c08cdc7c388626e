/**
 * Issue 27's proof: three `flowstore witness` processes and a fleet of two `flowstore serve` processes
 * on one LMDB store (one directory shared by both), real HTTP on 127.0.0.1, real SIGKILLs.
 *
 * - Normal operation: writes through both servers are appended to the log by both appenders (no fork),
 *   every witness cosigns, each server keeps the three cosignatures and serves the cosigned checkpoint.
 * - Both servers are SIGKILLed while writes go on; the store as the kill left it is the baseline.
 * - Three ways of rewriting history without the log's consent, each done to the baseline with the
 *   servers down and then served again; each is refused by every witness (exit code 4, the refused
 *   checkpoint kept beside the one it had cosigned as evidence):
 *   1. a truncated log: the store replaced by an import of an older backup (its log is shorter);
 *   2. a direct edit of the store: an event rewritten and its partition re-chained by hand (head and
 *      ledger too, so the chain verifies), the log rebuilt from the rewritten history;
 *   3. a forged restore: the store wiped and an export of the baseline, doctored (an event rewritten,
 *      re-chained), imported by hand instead of through the restore (which would append an epoch).
 *   `serve --log-checkpoint` (the cosigned checkpoint its operator kept outside the store) refuses each.
 * - Nothing acknowledged is lost: the baseline served again is cosigned by all three witnesses (it
 *   extends what they cosigned), every write either server acknowledged, before or during the kill, has
 *   an inclusion proof against that cosigned checkpoint, and `flowstore verify --log-checkpoint
 *   --witness ×3 --quorum 3` (the real CLI) accepts the store.
 */
import { createPublicKey } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { cp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FlowstoreClient } from "../../src/client/index.js";
import { EXIT } from "../../src/cli/exit.js";
import { exportStore, importStore } from "../../src/compose/transfer.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { TLOG } from "../../src/tlog/log.js";
import { leafHash, verifyInclusion } from "../../src/tlog/merkle.js";
import { checkSignatures, newKeyPem, parseCheckpoint, parseNote, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, vkey } from "../../src/tlog/note.js";
import { PRIVATE_FILE_MODE } from "../../src/private-files.js";
import { run, waitHealthy, type Run } from "../cli/spawn.js";
import { eventually, GiveUp } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { rewriteFrom } from "../support/rechain.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

const ROOT_PASSWORD = "fleet root password";
/** Bounds of the waits: a `serve` start takes half a minute on this loaded 2-core machine. */
const WAIT = { timeoutMs: 300_000, intervalMs: 200 };
const WITNESSES = 3;
const started = Date.now();
/** Where the test is, with the seconds since it started (it runs for minutes on a loaded machine). */
const phase = (what: string): void => console.log(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${what}`);

let dir: string;
let store: string;
const servers: { base: string; proc: Run }[] = [];
let witnessRuns: Run[] = [];
const witnesses = Array.from({ length: WITNESSES }, (_, i) => {
  const name = `witness.example/w${i + 1}`;
  const pem = newKeyPem();
  return { name, pem, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKeyFromPem(pem)))) };
});
/** Projects whose create a server acknowledged (201). */
const acked: string[] = [];
let logKey: string;

const env = (): Record<string, string> => ({
  FLOWSTORE_DATA: dir,
  FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD,
  FLOWSTORE_LOG_WITNESSES: witnesses.map((w) => w.vkey).join(","),
  FLOWSTORE_LOG_LEVEL: "warn",
});

/** The two servers, one after the other (the first start of a store creates its keys and root). */
async function startServers(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run(["serve", "--port", String(port), "--store", `lmdb:${store}`], env());
    servers[i] = { base, proc };
    await waitHealthy(base, proc, WAIT.timeoutMs);
  }
}

async function killServers(): Promise<void> {
  for (const s of servers) s.proc.child.kill("SIGKILL");
  await Promise.all(servers.map((s) => s.proc.exit));
}

/** The witnesses, each polling one of the servers (the fleet answers the same log on either). */
function startWitnesses(): void {
  witnessRuns = witnesses.map((w, i) =>
    run(["witness", "--log", servers[i % 2]!.base, "--log-key", logKey, "--key", join(dir, `w${i}.pem`), "--state", join(dir, `w${i}-state`), "--name", w.name, "--interval", "1"]),
  );
}

async function stopWitnesses(): Promise<void> {
  for (const r of witnessRuns) r.child.kill("SIGTERM");
  await Promise.all(witnessRuns.map((r) => r.exit));
}

const client = async (i: number): Promise<FlowstoreClient> => {
  const c = new FlowstoreClient({ baseUrl: servers[i]!.base });
  await c.login("root", ROOT_PASSWORD);
  return c;
};

/** Waits until every witness has cosigned the log at its current size, the log caught up (lag 0); answers the cosigned note. */
async function cosignedByAll(): Promise<string> {
  const anon = new FlowstoreClient({ baseUrl: servers[0]!.base });
  return eventually(
    async () => {
      for (const r of witnessRuns) if (r.child.exitCode !== null) throw new GiveUp(`a witness exited: ${r.out()} ${r.err()}`);
      const info = await anon.log.info();
      if (info.lag !== 0) return false;
      const note = await anon.log.cosignedCheckpoint();
      const parsed = parseNote(note);
      if (parseCheckpoint(parsed.text).size !== info.size) return false;
      return witnesses.every((w) => checkSignatures(parsed, parseVkey(w.vkey)).good.length === 1) ? note : false;
    },
    { what: "every witness to cosign the caught-up log", ...WAIT },
  );
}

/** Every witness exits with code 4, having printed why; answers the reasons. */
async function everyWitnessRefuses(): Promise<string[]> {
  const exits = await Promise.all(witnessRuns.map((r) => r.exit));
  expect(
    exits.map((e) => e.code),
    witnessRuns.map((r) => r.out() + r.err()).join("\n"),
  ).toEqual(witnessRuns.map(() => EXIT.witnessRefused));
  return witnessRuns.map((r) => {
    const line = r
      .out()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { outcome?: string; reason?: string })
      .find((l) => l.outcome === "inconsistent");
    return line!.reason!;
  });
}

async function evidenceCount(i: number): Promise<number> {
  const state = LmdbKv.open(join(dir, `w${i}-state`));
  try {
    return (await state.scan(["witness"], { prefix: ["evidence"] })).entries.length;
  } finally {
    await state.close();
  }
}

/** Replaces the store's directory with a copy (the servers are down). */
async function restoreCopy(from: string): Promise<void> {
  await rm(store, { recursive: true, force: true });
  await cp(from, store, { recursive: true });
}

/** The store wiped and `file` imported into it, then `doctor` applied (the servers are down). */
async function importByHand(file: string, doctor?: (kv: LmdbKv) => Promise<void>): Promise<void> {
  await rm(store, { recursive: true, force: true });
  const kv = LmdbKv.open(store);
  try {
    await importStore(kv, createReadStream(file));
    await doctor?.(kv);
  } finally {
    await kv.close();
  }
}

/** The same edit every forgery makes: project w0's first event (its creation) says another name. */
const forge = (kv: LmdbKv): Promise<void> =>
  rewriteFrom(kv, ["project", "w0"], 1, (e) => {
    (e as unknown as { data: { displayName: string } }).data = { ...(e as unknown as { data: object }).data, displayName: "Forged" };
  });

async function exportTo(file: string): Promise<void> {
  const kv = LmdbKv.open(store);
  try {
    const out = createWriteStream(file);
    await exportStore(kv, out);
    out.end();
    await finished(out);
  } finally {
    await kv.close();
  }
}

beforeAll(async () => {
  dir = await makeTempDir("witness-fleet");
  store = join(dir, "store");
  for (const [i, w] of witnesses.entries()) await writeFile(join(dir, `w${i}.pem`), w.pem, { mode: PRIVATE_FILE_MODE });
});

afterAll(async () => {
  for (const r of witnessRuns) r.child.kill("SIGKILL");
  for (const s of servers) s.proc.child.kill("SIGKILL");
  await removeTempDir(dir);
});

it("three witnesses cosign a two-server fleet's log and each refuses a truncated log, a store edited by hand and a forged restore, with nothing acknowledged lost", async () => {
  // Normal operation: writes through both servers, cosigned by every witness.
  await startServers();
  logKey = (await new FlowstoreClient({ baseUrl: servers[0]!.base }).log.info()).vkey;
  startWitnesses();
  const clients = [await client(0), await client(1)];
  const create = async (id: string, i: number): Promise<void> => {
    await clients[i % 2]!.projects.create({ id, displayName: `Project ${id}` });
    acked.push(id);
  };
  for (let i = 0; i < 4; i++) await create(`w${i}`, i);
  phase("fleet and witnesses up, 4 writes");
  const first = await cosignedByAll();
  phase("cosigned by all");
  const older = join(dir, "older.ndjson");
  await exportTo(older);
  for (let i = 4; i < 8; i++) await create(`w${i}`, i);
  const second = await cosignedByAll();
  expect(parseCheckpoint(parseNote(second).text).size).toBeGreaterThan(parseCheckpoint(parseNote(first).text).size);

  // Both servers SIGKILLed while writes go on through both.
  let stop = false;
  const writer = async (i: number): Promise<void> => {
    for (let n = 0; !stop && n < 50; n++) await create(`k${i}-${n}`, i).catch(() => (stop = true));
  };
  const writing = Promise.all([writer(0), writer(1)]);
  await eventually(() => acked.length >= 12, { what: "writes during the kill", ...WAIT });
  await killServers();
  stop = true;
  phase(`servers killed with ${acked.length} writes acknowledged`);
  await writing;
  await stopWitnesses();
  const baseline = join(dir, "baseline");
  await cp(store, baseline, { recursive: true });
  const baselineExport = join(dir, "baseline.ndjson");
  await exportTo(baselineExport);

  const attacks: { name: string; apply: () => Promise<void>; reason: RegExp }[] = [
    { name: "a truncated log (an older backup imported by hand)", apply: () => importByHand(older), reason: /went back|not an extension/ },
    {
      name: "a direct edit re-chained by hand, the log rebuilt over it",
      apply: async () => {
        await restoreCopy(baseline);
        const kv = LmdbKv.open(store);
        try {
          await forge(kv);
          await kv.dropPartition(TLOG.partition());
        } finally {
          await kv.close();
        }
      },
      reason: /changed|not an extension/,
    },
    { name: "a forged restore (a doctored export imported by hand)", apply: () => importByHand(baselineExport, forge), reason: /changed|not an extension/ },
  ];
  const pinned = join(dir, "pinned.note");
  await writeFile(pinned, second);
  for (const [n, attack] of attacks.entries()) {
    phase(attack.name);
    await attack.apply();
    // Given the cosigned checkpoint its operator kept outside the store, serve refuses it.
    const port = await freePort();
    const refusing = run(["serve", "--port", String(port), "--store", `lmdb:${store}`, "--log-checkpoint", pinned], env());
    expect((await refusing.exit).code, `${attack.name}: ${refusing.err()}`).toBe(EXIT.verificationFailed);
    expect(refusing.err()).toMatch(/refusing to serve/);
    // Served without it, every witness refuses it.
    await startServers();
    startWitnesses();
    const reasons = await everyWitnessRefuses();
    phase(`refused: ${reasons.join("; ")}`);
    for (const r of reasons) expect(r, attack.name).toMatch(attack.reason);
    for (let i = 0; i < WITNESSES; i++) expect(await evidenceCount(i), attack.name).toBe(n + 1);
    await killServers();
  }

  // The baseline served again: it extends what the witnesses cosigned, so they cosign it, and it holds every acknowledged write.
  await restoreCopy(baseline);
  await startServers();
  startWitnesses();
  phase("baseline served again");
  const final = await cosignedByAll();
  phase("baseline cosigned by all");
  const cp0 = parseCheckpoint(parseNote(final).text);
  const root = await client(1);
  for (const id of acked) {
    const p = await root.log.inclusion({ kind: "project", id, seq: 1, size: cp0.size });
    const ok = verifyInclusion(
      p.index,
      p.size,
      leafHash(Buffer.from(p.leaf, "base64")),
      p.proof.map((h) => Buffer.from(h, "base64")),
      cp0.root,
    );
    expect(ok, `project ${id}`).toBe(true);
  }
  const noteFile = join(dir, "cosigned.note");
  await writeFile(noteFile, final);
  await stopWitnesses();
  await killServers();
  const verify = run(["verify", "--data", dir, "--store", `lmdb:${store}`, "--log-checkpoint", noteFile, ...witnesses.flatMap((w) => ["--witness", w.vkey]), "--quorum", "3"]);
  expect((await verify.exit).code, verify.out() + verify.err()).toBe(EXIT.ok);
  expect(acked.length).toBeGreaterThanOrEqual(12);
}, 1_800_000);
