/** Operational routes, public: /health (the process), /ready (the store answers), /metrics. */
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { UnavailableError } from "../../errors.js";
import { METRICS_CONTENT_TYPE } from "../metrics.js";
import { problems } from "../problem.js";

const Status = Type.Object({ status: Type.String() }, { $id: "Status" });

export const systemRoutes: FastifyPluginAsync<{ metricsRoute?: boolean }> = async (app, options) => {
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
  app.get(
    "/metrics",
    {
      config: { ungated: true },
      schema: {
        tags: ["system"],
        summary: "Prometheus metrics (text format 0.0.4)",
        response: { 200: { description: "metrics", content: { "text/plain": { schema: Type.String() } } } },
      },
    },
    async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(await metrics.render()),
  );
};
