/**
 * The transparency log's client (`client.log`, routes/log.ts): its checkpoint notes, proofs and the
 * cosignature intake. Proofs come back as the server sends them (base64 hashes); `flowstore/tlog`'s
 * verifiers (src/tlog/merkle.ts, note.ts) check them without trusting the server.
 */
import { API, type HttpCore } from "./core.js";
import type { ConsistencyProof as ConsistencyProofBody, InclusionProof as InclusionProofBody, LogInfo as LogInfoBody } from "./openapi.js";

export type { LogInfo as LogInfoBody, ConsistencyProof as ConsistencyProofBody, InclusionProof as InclusionProofBody } from "./openapi.js";

export class LogApi {
  constructor(private readonly http: HttpCore) {}

  /** Origin, verifier key, size, epoch and lag. */
  info(): Promise<LogInfoBody> {
    return this.http.request("GET", `${API}/log`, { anonymous: true });
  }

  /** The latest checkpoint (a signed note) and its ETag. */
  async checkpoint(): Promise<{ note: string; etag: string | null }> {
    const { body, headers } = await this.http.exchange<string>("GET", `${API}/log/checkpoint`, { anonymous: true, headers: { accept: "text/plain" } });
    return { note: body, etag: headers.get("etag") };
  }

  /** The largest cosigned checkpoint with every cosignature (a ProblemError 404 when none). */
  async cosignedCheckpoint(): Promise<string> {
    return this.http.request<string>("GET", `${API}/log/checkpoint/cosigned`, { anonymous: true, headers: { accept: "text/plain" } });
  }

  /** The consistency proof from `from` leaves to `to` (default: the current size). */
  consistency(from: number, to?: number): Promise<ConsistencyProofBody> {
    return this.http.request("GET", `${API}/log/proof/consistency`, { anonymous: true, query: { from, to } });
  }

  /** The inclusion proof of an event (`seq` of the partition `kind`/`id`), with the checkpoint of its tree; needs the event's history view. */
  inclusion(event: { kind: string; id: string; seq: number; size?: number }): Promise<InclusionProofBody> {
    return this.http.request("GET", `${API}/log/proof/inclusion`, { query: { kind: event.kind, id: event.id, seq: event.seq, size: event.size } });
  }

  /** Hands the server a witness's cosigned checkpoint note. */
  cosign(note: string): Promise<{ size: number; witness: string }> {
    return this.http.request("POST", `${API}/log/cosignatures`, { anonymous: true, text: note });
  }
}
