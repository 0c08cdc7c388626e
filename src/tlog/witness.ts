/**
 * A witness of a flowstore log (issue 27; C2SP tlog-witness's role, driven by polling): another
 * organization runs it with its own Ed25519 key and its own LMDB state. Each `step()`:
 * 1. fetches the log's latest checkpoint (`GET /api/v1/log/checkpoint`) and checks the log's signature
 *    with the pinned log key (a note the log did not sign is refused, not cosigned);
 * 2. proves it consistent with the last checkpoint this witness cosigned: same root at the same size,
 *    or an RFC 9162 consistency proof (`GET /api/v1/log/proof/consistency`) that verifies;
 * 3. cosigns it (C2SP tlog-cosignature, Ed25519 cosignature/v1 with the time), stores it as the new
 *    state, and POSTs the cosigned note to the log (`POST /api/v1/log/cosignatures`).
 * A checkpoint that is smaller than the last one, has another root at the same size, or whose proof
 * does not verify is **refused**: both checkpoints (and the proof asked for) are kept in the state as
 * evidence, nothing is cosigned, and `step()` answers `inconsistent` (the CLI exits with its own code).
 *
 * State (partition `["witness"]` of its own store): `["log", origin]` → the last cosigned checkpoint
 * `{size, root, note}`; `["evidence", origin, time]` → `{cosigned, offered, proof, reason}`.
 */
import { ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { keyFamilies, PartitionKind } from "../kv/subspace.js";
import { verifyConsistency } from "./merkle.js";
import { checkSignatures, cosignLine, parseCheckpoint, parseNote, type Signer, type Verifier } from "./note.js";

export const WITNESS = new PartitionKind("witness");
const P = WITNESS.partition();
/** The witness's key families: the last checkpoint it cosigned of each log, and the evidence of each refusal. */
const F = keyFamilies(["log", "evidence"]);

export interface WitnessState {
  readonly size: number;
  /** base64 */
  readonly root: string;
  readonly note: string;
}

export type WitnessStep =
  | { readonly outcome: "cosigned"; readonly size: number; readonly posted: boolean }
  | { readonly outcome: "unchanged"; readonly size: number }
  | { readonly outcome: "inconsistent"; readonly reason: string; readonly cosigned: WitnessState; readonly offered: string };

export interface WitnessOptions {
  /** The log's base URL (the server: `http://host:port`). */
  readonly log: string;
  /** The log's verifier key (its checkpoint signature), pinned by the witness's operator. */
  readonly logKey: Verifier;
  readonly signer: Signer;
  readonly state: KvStore;
  readonly clock?: () => number;
  readonly fetch?: typeof fetch;
}

export class Witness {
  readonly #fetch: typeof fetch;
  readonly #clock: () => number;

  constructor(private readonly options: WitnessOptions) {
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#clock = options.clock ?? Date.now;
  }

  async #get(path: string): Promise<Response> {
    const res = await this.#fetch(`${this.options.log.replace(/\/+$/, "")}${path}`);
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return res;
  }

  /** The last checkpoint this witness cosigned for the log, or null. */
  async state(): Promise<WitnessState | null> {
    const e = await this.options.state.get(P, F.log.pack([this.options.logKey.name]));
    return e ? (JSON.parse(e.value.toString("utf8")) as WitnessState) : null;
  }

  /** The evidence kept of refused checkpoints. */
  async evidence(): Promise<{ cosigned: WitnessState; offered: string; proof: string[] | null; reason: string; at: number }[]> {
    const page = await this.options.state.scan(P, { prefix: F.evidence.pack([this.options.logKey.name]) });
    return page.entries.map((e) => JSON.parse(e.value.toString("utf8")));
  }

  async step(): Promise<WitnessStep> {
    const { logKey, signer, state } = this.options;
    const offered = await (await this.#get("/api/v1/log/checkpoint")).text();
    const note = parseNote(offered);
    const { good } = checkSignatures(note, logKey);
    if (good.length === 0) throw new ValidationError(`the checkpoint is not signed by the log's key ${logKey.name}`, "checkpoint");
    const cp = parseCheckpoint(note.text);
    if (cp.origin !== logKey.name) throw new ValidationError(`the checkpoint's origin ${cp.origin} is not the log's ${logKey.name}`, "checkpoint");
    const last = await this.state();
    let proof: string[] | null = null;
    let reason: string | null = null;
    if (last) {
      const lastRoot = Buffer.from(last.root, "base64");
      if (cp.size < last.size) reason = `the log's size went back from ${last.size} to ${cp.size} (a truncated or replaced log)`;
      else if (cp.size === last.size) {
        if (!cp.root.equals(lastRoot)) reason = `the log's root at size ${cp.size} changed (history rewritten)`;
        else return { outcome: "unchanged", size: cp.size };
      } else {
        const body = (await (await this.#get(`/api/v1/log/proof/consistency?from=${last.size}&to=${cp.size}`)).json()) as { proof: string[] };
        proof = body.proof;
        if (
          !verifyConsistency(
            last.size,
            cp.size,
            lastRoot,
            cp.root,
            proof.map((h) => Buffer.from(h, "base64")),
          )
        ) {
          reason = `the checkpoint of size ${cp.size} is not an extension of the cosigned one of size ${last.size} (its consistency proof fails)`;
        }
      }
    }
    if (reason !== null && last) {
      const at = this.#clock();
      await state.commit(P, [{ type: "put", key: F.evidence.pack([logKey.name, at]), value: Buffer.from(JSON.stringify({ cosigned: last, offered, proof, reason, at })) }]);
      return { outcome: "inconsistent", reason, cosigned: last, offered };
    }
    const line = cosignLine(note.text, signer, Math.floor(this.#clock() / 1000));
    const next: WitnessState = { size: cp.size, root: cp.root.toString("base64"), note: offered + line };
    await state.commit(P, [{ type: "put", key: F.log.pack([logKey.name]), value: Buffer.from(JSON.stringify(next)) }]);
    const res = await this.#fetch(`${this.options.log.replace(/\/+$/, "")}/api/v1/log/cosignatures`, {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8" },
      body: offered + line,
    });
    return { outcome: "cosigned", size: cp.size, posted: res.ok };
  }
}
