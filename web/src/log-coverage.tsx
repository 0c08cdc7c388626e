/**
 * Whether a resource's latest event is in the transparency log (issue 27) and covered by a checkpoint
 * the witnesses cosigned, and by how many of them; the inclusion proof on request. The server's
 * answers are shown as they come: `flowstore verify --log-checkpoint` and `flowstore audit` check them
 * without trusting the server.
 */
import { useState } from "preact/hooks";
import { client } from "./session.js";
import { useLoad } from "./ui.js";

/** The signature lines of a signed note (after its last blank line). */
const signatureLines = (note: string): number =>
  note
    .slice(note.lastIndexOf("\n\n") + 2)
    .split("\n")
    .filter((l) => l.startsWith("\u2014 ")).length;

/** `project` is the partition's owner (the project holding the resource), `seq` the event's seq in it. */
export function LogCoverage({ project, seq }: { project: string; seq: number }) {
  const [open, setOpen] = useState(false);
  const state = useLoad(async () => {
    const proof = await client.log.inclusion({ kind: "project", id: project, seq }).catch(() => null);
    const cosigned = await client.log.cosignedCheckpoint().catch(() => null);
    const size = cosigned ? Number(cosigned.split("\n")[1]) : 0;
    // The log's own signature is the first line; the others are the witnesses' cosignatures.
    return { proof, covered: proof !== null && size > proof.index, witnesses: cosigned ? signatureLines(cosigned) - 1 : 0, size };
  }, [project, seq]);
  const s = state.data;
  if (!s) return null;
  const text = !s.proof
    ? "The latest event is not in the transparency log yet."
    : s.covered
      ? `The latest event (leaf ${s.proof.index} of the transparency log) is covered by a checkpoint cosigned by ${s.witnesses} witness${s.witnesses === 1 ? "" : "es"}.`
      : `The latest event is leaf ${s.proof.index} of the transparency log; no cosigned checkpoint covers it yet${s.size ? ` (cosigned up to ${s.size} leaves)` : ""}.`;
  return (
    <section class="log-coverage" aria-label="Transparency log">
      <p role="status" data-covered={s.covered ? "yes" : "no"} data-witnesses={s.witnesses}>
        {text}
      </p>
      {s.proof ? (
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? "Hide the inclusion proof" : "Show the inclusion proof"}
        </button>
      ) : null}
      {open && s.proof ? <pre class="log-proof">{JSON.stringify(s.proof, null, 1)}</pre> : null}
    </section>
  );
}
