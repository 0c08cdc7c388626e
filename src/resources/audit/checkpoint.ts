/**
 * Signed checkpoints (immudb's idea of a client-kept signed state): the server signs
 * `{partition, seq, hash, time}` — a partition's chain head at a time — with an Ed25519 key. A client
 * keeps the checkpoint; later, `verify --checkpoint` proves that the partition's history extends it:
 * the event at `seq` still has `hash`, and the chain after it is intact. Anyone holding the public key
 * (carried in the checkpoint, with its SHA-256 fingerprint to pin) checks the signature offline.
 *
 * The signed bytes: "flowstore-checkpoint-v1\n" + canonical JSON of {partition, seq, hash, time}, and
 * `log` when the store-wide transparency log (src/tlog) covers the head: the log checkpoint (origin,
 * size, base64 root) that includes the event at `seq`, and its leaf index, so the holder can ask for its
 * inclusion proof and check it against a cosigned checkpoint (issue 27).
 *
 * The key: `FLOWSTORE_CHECKPOINT_KEY` (a PKCS#8 PEM Ed25519 private key) when set, else
 * `<dataDir>/checkpoint-key.pem` generated on first use (mode 0600, as the token secret in
 * identity/secret.ts); without either (a memory store), a key for the life of the process.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { ValidationError } from "../../errors.js";
import type { KvStore, Partition } from "../../kv/contract.js";
import { canonicalJson } from "../../kv/canonical.js";
import { loadOrCreatePrivateFile } from "../../private-files.js";
import { layout } from "../model/layout.js";

export const CHECKPOINT_KEY_FILE = "checkpoint-key.pem";
const DOMAIN = "flowstore-checkpoint-v1\n";

export interface Checkpoint {
  readonly partition: Partition;
  readonly seq: number;
  readonly hash: string | null;
  /** When it was signed (ISO 8601). */
  readonly time: string;
  /** The log checkpoint covering the head (absent when the log does not hold it yet, or there is none). */
  readonly log?: LogCovering;
  /** The signer's public key, SPKI DER, base64. */
  readonly publicKey: string;
  /** SHA-256 of the SPKI DER, hex: what an auditor pins. */
  readonly keyFingerprint: string;
  /** Ed25519 signature over the signed bytes, base64. */
  readonly signature: string;
}

/** Where the store-wide log holds a partition's head: the log checkpoint (origin, size, root) and the leaf. */
export interface LogCovering {
  readonly origin: string;
  readonly size: number;
  /** The root hash of the tree of `size` leaves, base64 (the checkpoint's third line). */
  readonly root: string;
  readonly index: number;
}

/** Finds the log checkpoint covering a partition's event (injected by the composition root; the log is a layer above). */
export type LogCoverage = (partition: Partition, seq: number) => Promise<LogCovering | null>;

export interface CheckpointKey {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

const signed = (c: Pick<Checkpoint, "partition" | "seq" | "hash" | "time" | "log">): Buffer =>
  Buffer.from(DOMAIN + canonicalJson({ partition: c.partition, seq: c.seq, hash: c.hash, time: c.time, ...(c.log ? { log: c.log } : {}) }), "utf8");

const spki = (k: KeyObject): Buffer => k.export({ type: "spki", format: "der" });

export const fingerprint = (publicKeyDer: Buffer): string => createHash("sha256").update(publicKeyDer).digest("hex");

/** The fingerprint an auditor pins for a key. */
export const fingerprintOf = (key: CheckpointKey): string => fingerprint(spki(key.publicKey));

export async function loadCheckpointKey(options: { dataDir?: string; env?: string }): Promise<CheckpointKey> {
  const fromPem = (pem: string, where: string): CheckpointKey => {
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey(pem);
    } catch {
      throw new ValidationError(`${where} is not a PEM private key`, where);
    }
    if (privateKey.asymmetricKeyType !== "ed25519") throw new ValidationError(`${where} must hold an Ed25519 key`, where);
    return { privateKey, publicKey: createPublicKey(privateKey) };
  };
  if (options.env !== undefined && options.env !== "") return fromPem(options.env, "FLOWSTORE_CHECKPOINT_KEY");
  if (options.dataDir === undefined) {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    return { privateKey, publicKey };
  }
  const file = join(options.dataDir, CHECKPOINT_KEY_FILE);
  const pem = await loadOrCreatePrivateFile(file, () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string);
  return fromPem(pem.toString("utf8"), CHECKPOINT_KEY_FILE);
}

/** Signs partitions' heads. */
export class Checkpoints {
  constructor(
    private readonly kv: KvStore,
    private readonly key: CheckpointKey,
    private readonly clock: () => number = Date.now,
    private readonly coverage?: LogCoverage,
  ) {}

  /** The partition's current head, signed. */
  async take(partition: Partition): Promise<Checkpoint> {
    const e = await this.kv.get(partition, layout.head);
    const head = e ? (JSON.parse(e.value.toString("utf8")) as { seq: number; hash: string }) : { seq: 0, hash: null };
    const log = head.seq > 0 && this.coverage ? await this.coverage(partition, head.seq) : null;
    const body = { partition: [...partition], seq: head.seq, hash: head.hash, time: new Date(this.clock()).toISOString(), ...(log ? { log } : {}) };
    const der = spki(this.key.publicKey);
    return { ...body, publicKey: der.toString("base64"), keyFingerprint: fingerprint(der), signature: sign(null, signed(body), this.key.privateKey).toString("base64") };
  }

  /** This server's public key (what an auditor pins). */
  get publicKey(): { publicKey: string; keyFingerprint: string } {
    const der = spki(this.key.publicKey);
    return { publicKey: der.toString("base64"), keyFingerprint: fingerprint(der) };
  }
}

/**
 * Checks a checkpoint's shape and signature; returns why it is refused, or null. The key must be the
 * trusted one (`trustedFingerprint`): otherwise anyone could sign with a key of their own. Without a
 * trusted fingerprint the checkpoint is refused, never trusted on its own key (issue 29, finding 13).
 */
export function checkCheckpoint(value: unknown, trustedFingerprint: string | undefined): string | null {
  const c = value as Checkpoint;
  if (!c || typeof c !== "object") return "a checkpoint is a JSON object";
  if (!Array.isArray(c.partition) || !Number.isSafeInteger(c.seq) || c.seq < 0 || (c.hash !== null && typeof c.hash !== "string") || typeof c.time !== "string") {
    return "a checkpoint has partition, seq, hash and time";
  }
  if (typeof c.publicKey !== "string" || typeof c.signature !== "string") return "a checkpoint has publicKey and signature";
  const der = Buffer.from(c.publicKey, "base64");
  const fp = fingerprint(der);
  if (c.keyFingerprint !== fp) return "the checkpoint's keyFingerprint is not its publicKey's";
  if (trustedFingerprint === undefined || trustedFingerprint === "") {
    return `no trusted key: pin the signing key's fingerprint (--trust ${fp} once you have checked it out of band), or keep the server's key in --data or FLOWSTORE_CHECKPOINT_KEY`;
  }
  if (trustedFingerprint.toLowerCase() !== fp) return `the checkpoint is signed by key ${fp}, not the trusted ${trustedFingerprint}`;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: der, format: "der", type: "spki" });
  } catch {
    return "the checkpoint's publicKey is not an SPKI public key";
  }
  if (key.asymmetricKeyType !== "ed25519") return "the checkpoint's key is not Ed25519";
  return verify(null, signed(c), key, Buffer.from(c.signature, "base64")) ? null : "the checkpoint's signature does not verify: it was forged or altered";
}
