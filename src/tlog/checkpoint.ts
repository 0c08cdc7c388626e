/**
 * The log's checkpoints: the tree head as a C2SP tlog-checkpoint note signed by the server's Ed25519
 * key (the key that signs per-partition checkpoints, resources/audit/checkpoint.ts), key name = the
 * log's origin. Ed25519 is deterministic, so the note of one size is the same bytes on every server of a
 * fleet that shares the key: its ETag is its hash. The cosigned checkpoint is the note of the largest
 * size that witnesses cosigned, with the log's signature and every stored cosignature line.
 */
import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { ValidationError } from "../errors.js";
import type { TransparencyLog } from "./log.js";
import {
  assertKeyName,
  checkSignatures,
  formatCheckpoint,
  formatNote,
  parseCheckpoint,
  parseNote,
  rawPublicKey,
  SIG_COSIGNATURE_V1,
  SIG_ED25519,
  signLine,
  vkey,
  type Verifier,
} from "./note.js";
import { verifyConsistency } from "./merkle.js";

export interface SignedCheckpoint {
  readonly size: number;
  readonly root: Buffer;
  /** The whole signed note (text, blank line, signature lines). */
  readonly note: string;
  /** A strong ETag of the note. */
  readonly etag: string;
}

/** The default origin of a log: a schema-less name derived from its key, unique per key. */
export function defaultOrigin(key: KeyObject): string {
  return `flowstore.invalid/log/${createHash("sha256")
    .update(rawPublicKey(createPublicKey(key)))
    .digest("hex")
    .slice(0, 16)}`;
}

export class LogCheckpoints {
  readonly origin: string;

  constructor(
    readonly log: TransparencyLog,
    private readonly privateKey: KeyObject,
    origin?: string,
  ) {
    this.origin = origin ?? defaultOrigin(privateKey);
    assertKeyName(this.origin);
  }

  /** The verifier key of the log (what witnesses and auditors pin). */
  get vkey(): string {
    return vkey(this.origin, SIG_ED25519, rawPublicKey(createPublicKey(this.privateKey)));
  }

  /** The note text of the checkpoint of `size` (unsigned). */
  async text(size: number): Promise<string> {
    return formatCheckpoint({ origin: this.origin, size, root: await this.log.root(size) });
  }

  async #signed(size: number, extra: readonly string[]): Promise<SignedCheckpoint> {
    const text = await this.text(size);
    const note = formatNote(text, [signLine(text, { name: this.origin, privateKey: this.privateKey }), ...extra]);
    return { size, root: parseCheckpoint(text).root, note, etag: `"${createHash("sha256").update(note).digest("base64url").slice(0, 22)}"` };
  }

  /** The checkpoint of the log's current size, signed. */
  async latest(): Promise<SignedCheckpoint> {
    const { size } = await this.log.head();
    return this.#signed(size, []);
  }

  /** The checkpoint of `size` (a size the log reached), signed. */
  async at(size: number): Promise<SignedCheckpoint> {
    return this.#signed(size, []);
  }

  /** The largest cosigned checkpoint with every cosignature, or null when no witness has cosigned. */
  async cosigned(): Promise<SignedCheckpoint | null> {
    const size = await this.log.latestCosigned();
    if (size === null) return null;
    return this.#signed(size, await this.log.cosignatures(size));
  }

  /**
   * Takes a witness's cosigned note: it must be this log's checkpoint of a size it reached, with the
   * log's own valid signature, and carry a valid cosignature/v1 by `witness` (whose key the operator
   * configured); the cosignature line is stored. Throws a ValidationError naming what is wrong.
   */
  async addCosignature(noteText: string, witness: Verifier): Promise<{ size: number }> {
    if (witness.type !== SIG_COSIGNATURE_V1) throw new ValidationError("a witness key is a cosignature/v1 verifier key (type 0x04)", "witness");
    const note = parseNote(noteText);
    const cp = parseCheckpoint(note.text, "note");
    if (cp.origin !== this.origin) throw new ValidationError(`the note is a checkpoint of ${cp.origin}, not of this log (${this.origin})`, "note");
    const { size } = await this.log.head();
    if (cp.size > size) throw new ValidationError(`the checkpoint's size ${cp.size} is beyond the log's ${size}`, "note");
    if (note.text !== (await this.text(cp.size))) throw new ValidationError("the checkpoint's root hash is not this log's at that size", "note");
    const { good } = checkSignatures(note, witness);
    const sig = good[0];
    if (!sig) throw new ValidationError(`the note carries no valid cosignature by ${witness.name}`, "note");
    await this.log.addCosignature(cp.size, witness.name, `\u2014 ${sig.name} ${Buffer.concat([sig.keyId, sig.signature]).toString("base64")}\n`);
    return { size: cp.size };
  }
}

/** True when the consistency proof links two checkpoints (sizes and roots). */
export function checkpointsConsistent(a: { size: number; root: Buffer }, b: { size: number; root: Buffer }, proof: readonly Buffer[]): boolean {
  return a.size <= b.size ? verifyConsistency(a.size, b.size, a.root, b.root, proof) : false;
}
