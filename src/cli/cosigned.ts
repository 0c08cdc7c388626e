/**
 * The options of the commands that check a cosigned log checkpoint (`verify --log-checkpoint`, `audit`):
 * `--witness <vkey…>` (inline or a file holding one), `--quorum <k>` (default: every witness) and
 * `--log-key <vkey>`, each checked here so that a bad one is a usage error naming its option.
 */
import { readFile } from "node:fs/promises";
import { parseVkey, SIG_COSIGNATURE_V1, type Verifier } from "../tlog/note.js";
import { UsageError } from "./exit.js";

export interface CosignedOptions {
  witness?: string[];
  quorum?: string;
  logKey?: string;
}

/** A vkey given inline or in a file. */
export async function vkeyArg(value: string, option: string): Promise<Verifier> {
  const text = value.includes("+") ? value : await readFile(value, "utf8").catch(() => value);
  try {
    return parseVkey(text);
  } catch (e) {
    throw new UsageError(`${option} ${value}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** The witnesses' keys and the quorum, checked. */
export async function witnessQuorum(options: CosignedOptions): Promise<{ witnesses: Verifier[]; quorum: number }> {
  const witnesses = await Promise.all((options.witness ?? []).map((w) => vkeyArg(w, "--witness")));
  if (witnesses.some((w) => w.type !== SIG_COSIGNATURE_V1)) throw new UsageError("--witness takes cosignature/v1 verifier keys (type 0x04)");
  const quorum = options.quorum === undefined ? witnesses.length : Number(options.quorum);
  if (!Number.isInteger(quorum) || quorum < 1 || quorum > witnesses.length) throw new UsageError(`--quorum must be from 1 to the number of --witness keys (${witnesses.length})`);
  return { witnesses, quorum };
}
