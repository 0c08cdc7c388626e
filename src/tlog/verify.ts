/**
 * Checks a store's transparency log against a cosigned checkpoint (`flowstore verify --log-checkpoint
 * NOTE --witness VKEY… --quorum k`): the note must carry the log's valid signature and valid
 * cosignature/v1 signatures by at least `quorum` distinct configured witnesses; the local log must have
 * reached its size, and the tree recomputed from the local leaves must have its root; and every leaf of
 * the current epoch must still name its event's hash in the partition's log. A store whose history was
 * rewritten (or whose log was truncated or forked) after the witnesses cosigned fails here.
 */
import type { TransparencyLog } from "./log.js";
import { checkSignatures, parseCheckpoint, parseNote, type Verifier } from "./note.js";

export interface CosignedVerification {
  readonly ok: boolean;
  readonly size: number | null;
  /** The witnesses whose cosignatures verified. */
  readonly cosigners: string[];
  readonly reasons: string[];
  readonly checked?: number;
}

export async function verifyCosigned(
  log: TransparencyLog,
  noteText: string,
  options: { logKey: Verifier; witnesses: readonly Verifier[]; quorum: number },
): Promise<CosignedVerification> {
  const reasons: string[] = [];
  let note;
  let cp;
  try {
    note = parseNote(noteText);
    cp = parseCheckpoint(note.text);
  } catch (e) {
    return { ok: false, size: null, cosigners: [], reasons: [e instanceof Error ? e.message : String(e)] };
  }
  if (checkSignatures(note, options.logKey).good.length === 0) reasons.push(`the checkpoint is not signed by the log's key ${options.logKey.name}`);
  const cosigners = [...new Set(options.witnesses.filter((w) => checkSignatures(note, w).good.length > 0).map((w) => `${w.name}+${w.keyId.toString("hex")}`))];
  if (cosigners.length < options.quorum) reasons.push(`${cosigners.length} valid cosignature(s) by the given witnesses, ${options.quorum} required`);
  const head = await log.head();
  if (head.size < cp.size) {
    reasons.push(`the local log has ${head.size} leaves, fewer than the cosigned ${cp.size} (truncated, or not caught up)`);
    return { ok: false, size: cp.size, cosigners, reasons };
  }
  const audit = await log.audit(cp.size);
  if (!audit.root.equals(cp.root)) reasons.push(`the local log's tree of ${cp.size} leaves has another root than the cosigned one (a forked or rewritten log)`);
  for (const m of audit.mismatches.slice(0, 20)) reasons.push(`leaf ${m.index} (${JSON.stringify(m.partition)} seq ${m.seq}): ${m.reason}`);
  return { ok: reasons.length === 0, size: cp.size, cosigners, reasons, checked: audit.checked };
}
