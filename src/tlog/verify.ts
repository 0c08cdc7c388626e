/**
 * Checks a store's transparency log against a cosigned checkpoint (`flowstore verify --log-checkpoint
 * NOTE --witness VKEY… --quorum k`, and `flowstore audit` over an export): the note must carry the log's valid signature (when its key is given) and valid
 * cosignature/v1 signatures by at least `quorum` distinct configured witnesses; the local log must have
 * reached its size, and the tree recomputed from the local leaves must have its root; and every leaf of
 * the current epoch must still name its event's hash in the partition's log. A store whose history was
 * rewritten (or whose log was truncated or forked) after the witnesses cosigned fails here.
 */
import type { LogCheckpoints } from "./checkpoint.js";
import type { TransparencyLog } from "./log.js";
import { checkSignatures, parseCheckpoint, parseNote, type Verifier } from "./note.js";

export interface CosignedVerification {
  readonly ok: boolean;
  readonly size: number | null;
  /** The witnesses whose cosignatures verified. */
  readonly cosigners: string[];
  readonly reasons: string[];
  readonly checked?: number;
  /** Leaves of earlier epochs in the checked tree: covered by the root, their events not checked (histories a restore replaced). */
  readonly earlier?: number;
}

export async function verifyCosigned(
  log: TransparencyLog,
  noteText: string,
  options: { logKey: Verifier | null; witnesses: readonly Verifier[]; quorum: number },
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
  // With no log key (an auditor who pinned only the witnesses), the quorum vouches for the note: every
  // witness checked the log's signature before cosigning.
  if (options.logKey && checkSignatures(note, options.logKey).good.length === 0) reasons.push(`the checkpoint is not signed by the log's key ${options.logKey.name}`);
  const cosigners = [...new Set(options.witnesses.filter((w) => checkSignatures(note, w).good.length > 0).map((w) => `${w.name}+${w.keyId.toString("hex")}`))];
  if (cosigners.length < options.quorum) reasons.push(`${cosigners.length} valid cosignature(s) by the given witnesses, ${options.quorum} required`);
  const head = await log.head();
  if (head.start > 0 && cp.size <= head.start) {
    reasons.push(
      `the checkpoint's tree of ${cp.size} leaves ends before epoch ${head.epoch} begins (its first leaf is ${head.start}): it covers none of the events here; check against a checkpoint cosigned since`,
    );
    return { ok: false, size: cp.size, cosigners, reasons };
  }
  if (head.size < cp.size) {
    reasons.push(`the local log has ${head.size} leaves, fewer than the cosigned ${cp.size} (truncated, or not caught up)`);
    return { ok: false, size: cp.size, cosigners, reasons };
  }
  const audit = await log.audit(cp.size);
  if (!audit.root.equals(cp.root)) reasons.push(`the local log's tree of ${cp.size} leaves has another root than the cosigned one (a forked or rewritten log)`);
  for (const m of audit.mismatches.slice(0, 20)) reasons.push(`leaf ${m.index} (${JSON.stringify(m.partition)} seq ${m.seq}): ${m.reason}`);
  return { ok: reasons.length === 0, size: cp.size, cosigners, reasons, checked: audit.checked, earlier: head.start + audit.earlierEpochs };
}

/**
 * Why a server must not serve this store's log (an empty list when it may), checked at `serve`'s start:
 * - every partition's newest logged event is still the one the log holds (`headsProblems`);
 * - the largest checkpoint the store keeps cosignatures of still carries a valid cosignature by one of
 *   the configured witnesses: its tree was not rebuilt under it;
 * - with `pinned` (a cosigned checkpoint note the operator keeps outside the store), the log has reached
 *   its size and has its root there: a log rebuilt or cut back, cosignatures and all, is refused too.
 */
export async function unservableLog(log: TransparencyLog, checkpoints: LogCheckpoints, options: { witnesses: readonly Verifier[]; pinned?: string }): Promise<string[]> {
  const reasons = (await log.headsProblems()).map((p) => `${JSON.stringify(p.partition)} seq ${p.seq}: ${p.reason}`);
  const cosigned = options.witnesses.length > 0 ? await checkpoints.cosigned() : null;
  if (cosigned) {
    const note = parseNote(cosigned.note);
    if (!options.witnesses.some((w) => checkSignatures(note, w).good.length > 0))
      reasons.push(`the log's tree at size ${cosigned.size} is not the one the witnesses cosigned (their cosignatures no longer verify over it)`);
  }
  if (options.pinned !== undefined) {
    const cp = parseCheckpoint(parseNote(options.pinned, "FLOWSTORE_LOG_CHECKPOINT").text, "FLOWSTORE_LOG_CHECKPOINT");
    const { size } = await log.head();
    if (size < cp.size) reasons.push(`the log has ${size} leaves, fewer than the ${cp.size} of the pinned checkpoint (a truncated or rebuilt log)`);
    else if (!(await log.root(cp.size)).equals(cp.root)) reasons.push(`the log's tree of ${cp.size} leaves has another root than the pinned checkpoint (a rebuilt or forked log)`);
  }
  return reasons;
}
