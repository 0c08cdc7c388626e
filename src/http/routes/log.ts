/**
 * The store-wide transparency log over HTTP (src/tlog, issue 27):
 *
 *   GET  /log                          → {origin, vkey, size, epoch, cursor, lag}         public
 *   GET  /log/checkpoint               → the C2SP checkpoint note (text/plain, ETag)       public
 *   GET  /log/checkpoint/cosigned      → the largest cosigned checkpoint, with every witness's cosignature (404 when none)
 *   GET  /log/proof/consistency?from&to → {from, to, proof}: RFC 9162 consistency proof   public, O(log n) hashes
 *   POST /log/cosignatures             → a witness's cosigned note (text/plain)           public: only a configured witness key's valid cosignature is kept
 *   GET  /log/proof/inclusion?kind&id&seq[&size] → {index, size, leaf, proof, checkpoint} the event's viewers only (404 otherwise)
 *
 * The public routes serve what witnesses and auditors need without an account: the checkpoint, proofs
 * between sizes (hashes only) and the cosignature intake; an inclusion proof carries the leaf (which
 * names a partition and an event hash), so it is served to those who may view the event's history.
 */
import { Type } from "@sinclair/typebox";
import { NotFoundError, ValidationError } from "../../errors.js";
import { CHAINED_KINDS } from "../../compose/kinds.js";
import { parseNote, parseVkey, type Verifier } from "../../tlog/note.js";
import { COSIGNATURE_BODY_LIMIT } from "../body-limits.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

const tags = ["log"];
const TEXT = "text/plain; charset=utf-8";
const Base64Hash = Type.String({ description: "a SHA-256 hash, base64", contentEncoding: "base64" });

export const LogInfo = Type.Object(
  {
    origin: Type.String({ description: "the checkpoint's first line and the key name of the log's signature" }),
    vkey: Type.String({ description: "the log's C2SP verifier key: <name>+<key id>+<base64 of 0x01 and the Ed25519 key>" }),
    size: Type.Integer({ minimum: 0 }),
    epoch: Type.Integer({ minimum: 0, description: "0, then one more after each restore of the whole store (appended, never truncated)" }),
    lag: Type.Integer({ minimum: 0, description: "change-feed entries not yet in the log" }),
  },
  { $id: "LogInfo" },
);

export const ConsistencyProof = Type.Object(
  {
    from: Type.Integer({ minimum: 0 }),
    to: Type.Integer({ minimum: 0 }),
    proof: Type.Array(Base64Hash, { description: "RFC 9162 section 2.1.4 consistency proof, in its order" }),
  },
  { $id: "ConsistencyProof" },
);

export const InclusionProof = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    size: Type.Integer({ minimum: 1 }),
    leaf: Type.String({ description: "the leaf's bytes, base64: 'flowstore-leaf/v1\\n' + canonical JSON {e, h, p, s}" }),
    proof: Type.Array(Base64Hash, { description: "RFC 9162 section 2.1.3 inclusion proof, leaf-most first" }),
    checkpoint: Type.String({ description: "the signed checkpoint note of the tree of `size` leaves" }),
  },
  { $id: "InclusionProof" },
);

const size = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export interface LogRouteOptions {
  /** The witnesses whose cosignatures the server keeps: C2SP verifier keys of type 0x04 (cosignature/v1). */
  readonly witnesses?: readonly string[];
}

/** The public routes: checkpoints, consistency proofs, cosignature intake. */
export const logPublicRoutes: RoutePlugin<LogRouteOptions> = async (app, options) => {
  const { tree, checkpoints } = app.flowstore.log;
  const witnesses: Verifier[] = (options.witnesses ?? []).map((k) => parseVkey(k));
  // A cosigned note is text: this plugin (and only it; the server refuses text/plain elsewhere) reads it.
  app.addContentTypeParser("text/plain", { parseAs: "string" }, (_request, body, done) => done(null, body));

  app.get("/log", { schema: { tags, summary: "The transparency log: its origin, verifier key, size, epoch and lag", response: { 200: LogInfo } } }, async () => {
    const [head, lag] = await Promise.all([tree.head(), tree.lag()]);
    return { origin: checkpoints.origin, vkey: checkpoints.vkey, size: head.size, epoch: head.epoch, lag };
  });

  const textResponse = (summary: string) => ({
    tags,
    summary,
    response: {
      200: { description: "a C2SP signed note", content: { "text/plain": { schema: Type.String() } } },
      ...problems(404),
    },
  });

  app.get(
    "/log/checkpoint",
    // (Every GET answering an ETag answers 304 to a matching If-None-Match: http/conventions.ts.)
    { config: { etag: true }, schema: textResponse("The log's latest checkpoint: a C2SP tlog-checkpoint in a signed note (Ed25519), with a strong ETag") },
    async (_request, reply) => {
      const cp = await checkpoints.latest();
      reply.header("etag", cp.etag).header("cache-control", "no-cache");
      return reply.type(TEXT).send(cp.note);
    },
  );

  app.get(
    "/log/checkpoint/cosigned",
    { config: { etag: true }, schema: textResponse("The largest checkpoint witnesses cosigned, with the log's signature and every cosignature (C2SP tlog-cosignature)") },
    async (_request, reply) => {
      const cp = await checkpoints.cosigned();
      if (!cp) throw new NotFoundError("no witness has cosigned a checkpoint of this log yet");
      reply.header("etag", cp.etag).header("cache-control", "no-cache");
      return reply.type(TEXT).send(cp.note);
    },
  );

  app.get(
    "/log/proof/consistency",
    {
      schema: {
        tags,
        summary: "A consistency proof between two tree sizes (RFC 9162 2.1.4): at most 2·log2(to) hashes",
        querystring: Type.Object({ from: size, to: Type.Optional(size) }, { additionalProperties: false }),
        response: { 200: ConsistencyProof, ...problems(400) },
      },
    },
    async (request) => {
      const p = await tree.consistency(request.query.from, request.query.to);
      return { from: p.from, to: p.to, proof: p.proof.map((h) => h.toString("base64")) };
    },
  );

  app.post(
    "/log/cosignatures",
    {
      bodyLimit: COSIGNATURE_BODY_LIMIT,
      schema: {
        tags,
        summary: "A witness's cosignature: the checkpoint note with its cosignature/v1 line, kept when the witness's key is configured and the cosignature verifies",
        body: Type.String({ maxLength: COSIGNATURE_BODY_LIMIT }),
        response: { 200: Type.Object({ size: Type.Integer({ minimum: 0 }), witness: Type.String() }), ...problems(400, 403, 413, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      if (typeof body !== "string") throw new ValidationError("send the cosigned note as text/plain", "body");
      const note = parseNote(body, "body");
      const known = witnesses.filter((w) => note.signatures.some((s) => s.name === w.name && s.keyId.equals(w.keyId)));
      if (known.length === 0) throw new ValidationError("the note carries no cosignature by a witness this server is configured with", "body");
      let kept: { size: number; witness: string } | null = null;
      for (const w of known) kept = { ...(await checkpoints.addCosignature(body, w)), witness: w.name };
      return kept!;
    },
  );
};

/** The authenticated routes: an event's inclusion proof, for those who may view its history. */
export const logRoutes: RoutePlugin = async (app) => {
  const { tree, checkpoints } = app.flowstore.log;
  const stores = [app.flowstore.resources, app.flowstore.tenancy];

  app.get(
    "/log/proof/inclusion",
    {
      schema: {
        tags,
        summary: "The inclusion proof of an event (RFC 9162 2.1.3) in the log's tree, with that tree's signed checkpoint; for the event's history viewers",
        querystring: Type.Object(
          {
            kind: Type.String({ minLength: 1, maxLength: 64, description: "the partition's kind (the owner type: project, space, …)" }),
            id: Type.String({ minLength: 1, maxLength: 256, description: "the partition owner's id" }),
            seq: Type.Integer({ minimum: 1, description: "the event's seq in its partition's history" }),
            size: Type.Optional(Type.Integer({ minimum: 1, description: "the tree size to prove against (default: the current)" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: InclusionProof, ...problems(400, 404) },
      },
    },
    async (request) => {
      const { kind, id, seq } = request.query;
      const notFound = (): NotFoundError => new NotFoundError(`no event ${seq} of ${kind} ${id} in the log`);
      if (!CHAINED_KINDS.includes(kind)) throw notFound();
      const partition = [kind, id];
      const [event] = await app.flowstore.resources.writer.feed.events(partition, seq, seq);
      if (!event) throw notFound();
      let visible = false;
      for (const store of stores) if ((await store.audit.eventFor(request.actor, event, { sealed: true })) !== null) visible = true;
      if (!visible) throw notFound();
      const index = await tree.indexOf(partition, seq);
      if (index === null) throw new NotFoundError(`event ${seq} of ${kind} ${id} is not in the log yet (it trails the writes by its merge delay)`);
      const at = request.query.size ?? (await tree.head()).size;
      if (index >= at) throw new ValidationError(`the event is leaf ${index}, beyond a tree of ${at}`, "size");
      const p = await tree.inclusion(index, at);
      const cp = await checkpoints.at(at);
      return { index, size: at, leaf: p.leaf.toString("base64"), proof: p.proof.map((h) => h.toString("base64")), checkpoint: cp.note };
    },
  );
};
