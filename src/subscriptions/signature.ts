/**
 * The webhook signature: `Flowstore-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
 * The timestamp is signed with the body, so a receiver that refuses old timestamps refuses replays of a
 * captured delivery (examples/webhook-receiver verifies it with node:crypto alone).
 */
import { createHmac } from "node:crypto";

export const SIGNATURE_HEADER = "flowstore-signature";

export function sign(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}
