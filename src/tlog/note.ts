/**
 * C2SP signed notes, transparency-log checkpoints and cosignatures, in their published text formats:
 * - signed-note (c2sp.org/signed-note): text ending in a newline, a blank line, and signature lines
 *   `— <name> base64(keyID(4) || signature)`; an Ed25519 key's ID is
 *   SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]; a verifier key (vkey) is
 *   `<name>+<hex key ID>+base64(type || public key)`;
 * - tlog-checkpoint (c2sp.org/tlog-checkpoint): the note text `<origin>\n<size>\n<base64 root>\n`;
 * - tlog-cosignature (c2sp.org/tlog-cosignature), Ed25519 `cosignature/v1`: key ID with type byte 0x04,
 *   the signature `u64 timestamp (big-endian) || Ed25519 signature` over
 *   `cosignature/v1\ntime <t>\n` followed by the checkpoint's note text.
 * Keys are node:crypto KeyObjects; only the raw 32 public bytes enter the formats.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { ValidationError } from "../errors.js";

export const SIG_ED25519 = 0x01;
export const SIG_COSIGNATURE_V1 = 0x04;
/** Verifiers must accept at least 16 signatures (signed-note); more than this many lines are refused. */
export const MAX_SIGNATURES = 64;

export interface NoteSignature {
  readonly name: string;
  readonly keyId: Buffer;
  /** The signature bytes after the key ID. */
  readonly signature: Buffer;
}

export interface Note {
  /** The signed text, final newline included. */
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly root: Buffer;
  readonly extensions: readonly string[];
}

/** The 32 raw bytes of an Ed25519 public key. */
export function rawPublicKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: "jwk" }) as { x?: string };
  if (key.asymmetricKeyType !== "ed25519" || !jwk.x) throw new ValidationError("an Ed25519 key is required", "key");
  return Buffer.from(jwk.x, "base64url");
}

export function ed25519PublicFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new ValidationError("an Ed25519 public key is 32 bytes", "key");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" });
}

export function keyId(name: string, type: number, raw: Uint8Array): Buffer {
  return createHash("sha256")
    .update(Buffer.from(name, "utf8"))
    .update(Buffer.from([0x0a, type]))
    .update(raw)
    .digest()
    .subarray(0, 4);
}

export function assertKeyName(name: string): void {
  if (name === "" || /[\s+]/u.test(name) || /[\u0000-\u001f]/.test(name)) throw new ValidationError("a key name is non-empty, with no spaces and no plus", "name");
}

/** A verifier key: `<name>+<hex id>+base64(type || key)`. */
export function vkey(name: string, type: number, raw: Uint8Array): string {
  assertKeyName(name);
  return `${name}+${keyId(name, type, raw).toString("hex")}+${Buffer.concat([Buffer.from([type]), raw]).toString("base64")}`;
}

export interface Verifier {
  readonly name: string;
  readonly type: number;
  readonly keyId: Buffer;
  readonly publicKey: KeyObject;
  readonly raw: Buffer;
}

export function parseVkey(text: string): Verifier {
  // The name holds no "+", the base64 may.
  const parts = text.trim().split("+");
  if (parts.length < 3) throw new ValidationError("a verifier key is <name>+<hex key id>+<base64 key>", "vkey");
  const [name, id] = parts as [string, string];
  const b64 = parts.slice(2).join("+");
  assertKeyName(name);
  const bytes = Buffer.from(b64, "base64");
  if (!/^[0-9a-f]{8}$/.test(id) || bytes.length !== 33) throw new ValidationError("a verifier key is <name>+<8 hex digits>+<base64 of a type byte and 32 key bytes>", "vkey");
  const type = bytes[0]!;
  if (type !== SIG_ED25519 && type !== SIG_COSIGNATURE_V1) throw new ValidationError(`signature type ${type} is not supported (Ed25519 0x01, cosignature/v1 0x04)`, "vkey");
  const raw = bytes.subarray(1);
  const expected = keyId(name, type, raw);
  if (expected.toString("hex") !== id) throw new ValidationError("the verifier key's ID is not its key's", "vkey");
  return { name, type, keyId: expected, publicKey: ed25519PublicFromRaw(raw), raw };
}

/** A signer of notes: an Ed25519 private key and its name. */
export interface Signer {
  readonly name: string;
  readonly privateKey: KeyObject;
}

export function signerVkey(s: Signer, type = SIG_ED25519): string {
  return vkey(s.name, type, rawPublicKey(createPublicKey(s.privateKey)));
}

/** Signs `text` (which must end in a newline) as a note signature line. */
export function signLine(text: string, s: Signer): string {
  const raw = rawPublicKey(createPublicKey(s.privateKey));
  const sig = sign(null, Buffer.from(text, "utf8"), s.privateKey);
  return `\u2014 ${s.name} ${Buffer.concat([keyId(s.name, SIG_ED25519, raw), sig]).toString("base64")}\n`;
}

export function formatNote(text: string, signatureLines: readonly string[]): string {
  return `${text}\n${signatureLines.join("")}`;
}

const SIGNATURE_LINE = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/u;

/** Parses a signed note (text, blank line, signature lines); throws a ValidationError naming what is wrong. */
export function parseNote(note: string, field = "note"): Note {
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new ValidationError("a note holds no control characters but newlines", field);
  if (!note.endsWith("\n")) throw new ValidationError("a note ends in a newline", field);
  const split = note.lastIndexOf("\n\n");
  if (split < 0) throw new ValidationError("a note has a blank line before its signatures", field);
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new ValidationError(`a note has at most ${MAX_SIGNATURES} signatures here`, field);
  const signatures = lines.map((line) => {
    const m = SIGNATURE_LINE.exec(line);
    if (!m) throw new ValidationError("a note signature line is '\u2014 <name> <base64>'", field);
    const bytes = Buffer.from(m[2]!, "base64");
    if (bytes.length < 5) throw new ValidationError("a note signature is a key ID and a signature", field);
    return { name: m[1]!, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) };
  });
  return { text, signatures };
}

/** The signatures of `note` by `verifier` (matched by name and key ID) that verify; `bad` counts those that do not. */
export function checkSignatures(note: Note, verifier: Verifier): { good: NoteSignature[]; bad: number } {
  const good: NoteSignature[] = [];
  let bad = 0;
  for (const s of note.signatures) {
    if (s.name !== verifier.name || !s.keyId.equals(verifier.keyId)) continue;
    const ok =
      verifier.type === SIG_ED25519 ? verify(null, Buffer.from(note.text, "utf8"), verifier.publicKey, s.signature) : cosignatureValid(note.text, s.signature, verifier.publicKey);
    if (ok) good.push(s);
    else bad++;
  }
  return { good, bad };
}

export function formatCheckpoint(c: Omit<Checkpoint, "extensions"> & { extensions?: readonly string[] }): string {
  return `${c.origin}\n${c.size}\n${c.root.toString("base64")}\n${(c.extensions ?? []).map((e) => `${e}\n`).join("")}`;
}

export function parseCheckpoint(text: string, field = "checkpoint"): Checkpoint {
  const lines = text.split("\n");
  if (lines.length < 4 || lines.at(-1) !== "") throw new ValidationError("a checkpoint is an origin, a size and a root hash, one per line", field);
  const [origin, size, root, ...rest] = lines.slice(0, -1) as [string, string, string, ...string[]];
  if (origin === "") throw new ValidationError("a checkpoint's origin is not empty", field);
  if (!/^(0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size))) throw new ValidationError("a checkpoint's size is a decimal with no leading zero", field);
  const hash = Buffer.from(root, "base64");
  if (hash.length !== 32 || hash.toString("base64") !== root) throw new ValidationError("a checkpoint's root hash is the base64 of 32 bytes", field);
  if (rest.some((l) => l === "")) throw new ValidationError("a checkpoint's extension lines are not empty", field);
  return { origin, size: Number(size), root: hash, extensions: rest };
}

/** The message a cosignature/v1 signs. */
export function cosignedMessage(checkpointText: string, timestamp: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${checkpointText}`, "utf8");
}

function cosignatureValid(text: string, signature: Buffer, key: KeyObject): boolean {
  if (signature.length !== 72) return false;
  const ts = signature.readBigUInt64BE(0);
  if (ts > 2n ** 63n - 1n) return false;
  return verify(null, cosignedMessage(text, Number(ts)), key, signature.subarray(8));
}

/** The timestamp (POSIX seconds) of a cosignature/v1 signature. */
export function cosignatureTime(signature: Buffer): number {
  return Number(signature.readBigUInt64BE(0));
}

/** A cosignature/v1 line by `s` over the checkpoint's note text at `timestamp` (POSIX seconds). */
export function cosignLine(checkpointText: string, s: Signer, timestamp: number): string {
  const raw = rawPublicKey(createPublicKey(s.privateKey));
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(BigInt(timestamp));
  const sig = sign(null, cosignedMessage(checkpointText, timestamp), s.privateKey);
  return `\u2014 ${s.name} ${Buffer.concat([keyId(s.name, SIG_COSIGNATURE_V1, raw), ts, sig]).toString("base64")}\n`;
}

/** The signature line of one signature. */
export function signatureLine(s: NoteSignature): string {
  return `\u2014 ${s.name} ${Buffer.concat([s.keyId, s.signature]).toString("base64")}\n`;
}

/** A new Ed25519 key as PKCS#8 PEM. */
export function newKeyPem(): string {
  return generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string;
}

export function privateKeyFromPem(pem: string, field = "key"): KeyObject {
  let k: KeyObject;
  try {
    k = createPrivateKey(pem);
  } catch {
    throw new ValidationError("not a PEM private key", field);
  }
  if (k.asymmetricKeyType !== "ed25519") throw new ValidationError("an Ed25519 key is required", field);
  return k;
}
