/**
 * The reason a writer gives for a change: the `Flowstore-Reason` request header, its value the reason's
 * UTF-8 percent-encoded (`encodeURIComponent`; plain ASCII without `%` passes as is), at most REASON_MAX
 * characters once decoded, no control characters but line breaks and tabs. The authentication hooks put
 * it on the request's actor (`Actor.reason`), so every event the request writes records it as
 * `payload.reason`, whatever route writes: native or TruBudget's.
 */
import type { FastifyRequest } from "fastify";
import type { Actor } from "../access/actor.js";
import { ValidationError } from "../errors.js";
import { REASON_MAX } from "../resources/model/wire.js";

export const REASON_HEADER = "flowstore-reason";
const FIELD = `headers.${REASON_HEADER}`;
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** The actor with the reason the request gives (the actor itself when it gives none); a malformed reason is a 400 naming the header. */
export function withReason(request: FastifyRequest, actor: Actor): Actor {
  const raw = request.headers[REASON_HEADER];
  if (raw === undefined) return actor;
  let reason: string;
  try {
    reason = decodeURIComponent(Array.isArray(raw) ? raw.join(", ") : raw).trim();
  } catch {
    throw new ValidationError("the reason must be percent-encoded UTF-8 (encodeURIComponent)", FIELD);
  }
  if (reason.length === 0) throw new ValidationError("the reason is empty", FIELD);
  if (reason.length > REASON_MAX) throw new ValidationError(`the reason is longer than ${REASON_MAX} characters`, FIELD);
  if (CONTROL.test(reason)) throw new ValidationError("the reason holds a control character", FIELD);
  return { ...actor, reason };
}
