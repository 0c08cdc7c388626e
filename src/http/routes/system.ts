/**
 * Operational routes: /health (the process) and /ready (the store answers), public; /metrics, for a scraper
 * bearing the metrics token (`--metrics-token-file`) or root (issue 29, finding 14: its per-route counts and
 * log-in failure rates are not for every caller). Served apart (`--metrics-port`), /metrics is the
 * operator's to expose on an internal address only.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { ROOT_ID } from "../../access/actor.js";
import { UnauthorizedError, UnavailableError } from "../../errors.js";
import { bearerToken } from "../auth.js";
import { METRICS_CONTENT_TYPE } from "../metrics.js";
import { problems } from "../problem.js";

const Status = Type.Object({ status: Type.String() }, { $id: "Status" });

const digest = (s: string) => createHash("sha256").update(s).digest();

export const systemRoutes: FastifyPluginAsync<{ metricsRoute?: boolean; metricsToken?: string }> = async (app, options) => {
  const { metrics } = app.flowstore;

  app.get("/health", { config: { ungated: true }, schema: { tags: ["system"], summary: "The process is up", response: { 200: Status } } }, async () => ({
    status: "ok",
  }));

  app.get("/ready", { schema: { tags: ["system"], summary: "The store answers", response: { 200: Status, ...problems(503) } } }, async () => {
    try {
      await app.flowstore.ready();
    } catch (e) {
      app.log.warn({ err: e }, "readiness check failed");
      throw new UnavailableError("the store does not answer");
    }
    return { status: "ready" };
  });

  if (options.metricsRoute === false) return;
  const scrapeToken = options.metricsToken === undefined ? undefined : digest(options.metricsToken);
  /** The metrics token, compared in constant time, or root's access token. */
  const mayScrape = async (request: FastifyRequest): Promise<void> => {
    const token = bearerToken(request);
    if (scrapeToken && timingSafeEqual(digest(token), scrapeToken)) return;
    const actor = await app.flowstore.tokens.verify(token);
    if (actor.id !== ROOT_ID) throw new UnauthorizedError("/metrics takes the metrics token or root's access token");
  };
  app.get(
    "/metrics",
    {
      config: { ungated: true },
      onRequest: mayScrape,
      schema: {
        tags: ["system"],
        summary: "Prometheus metrics (text format 0.0.4), for the metrics token or root",
        security: [{ bearer: [] }],
        response: { 200: { description: "metrics", content: { "text/plain": { schema: Type.String() } } }, ...problems(401) },
      },
    },
    async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(await metrics.render()),
  );
};
