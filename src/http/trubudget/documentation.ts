/**
 * TruBudget's API documentation where TruBudget serves it (`GET /api/documentation`, its Swagger UI;
 * its provisioning tool reads it to see the API up): the adapter's own OpenAPI document, built from the
 * adapter's route schemas alone (`/api/documentation/json`, apart from flowstore's `/openapi.json`, which
 * leaves these routes out), and a Swagger UI page reading it, on the Swagger UI assets the server already
 * serves for its own documentation. Public, as TruBudget's.
 */
import swagger from "@fastify/swagger";
import type { FastifyInstance } from "fastify";
import { RELEASE } from "./system.js";

/** Where the documentation lives under the adapter's prefix. */
export const DOCUMENTATION = "/documentation";

/** The decorator of the adapter's document (the server's own is `swagger`). */
const DECORATOR = "trubudgetSwagger";

declare module "fastify" {
  interface FastifyInstance {
    trubudgetSwagger?: () => unknown;
  }
}

/**
 * Collects the adapter's routes into their own OpenAPI document: registered on the adapter's scope
 * before its routes. Each route is hidden from flowstore's document (index.ts); here it is shown.
 */
export async function collectDocumentation(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    decorator: DECORATOR,
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "TruBudget's API on flowstore",
        version: RELEASE,
        description: "TruBudget's HTTP API (v2.18) as flowstore serves it: its routes, envelopes ({apiVersion, data}) and error bodies",
      },
      components: { securitySchemes: { bearerToken: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
    transform: ({ schema, url }) => ({ schema: { ...schema, hide: false }, url }),
  } as Parameters<typeof swagger>[1]);
}

/** The documentation's routes: the document, the UI's page and the script that starts it. */
export async function documentationRoutes(app: FastifyInstance, options: { mountedAt: string; uiAssets: string }): Promise<void> {
  const base = `${options.mountedAt}${DOCUMENTATION}`;
  // Hidden from both documents (swaggerTransform false: the adapter's transform does not show them).
  const hidden = { schema: { hide: true }, config: { swaggerTransform: false as const } };
  app.get(`${DOCUMENTATION}/json`, hidden, async () => {
    const document = app.trubudgetSwagger?.();
    if (document === undefined) throw new Error("the adapter's document was not collected");
    return document;
  });
  app.get(`${DOCUMENTATION}/start.js`, hidden, async (_request, reply) =>
    reply
      .type("text/javascript; charset=utf-8")
      .send(`window.onload = () => { window.ui = SwaggerUIBundle({ url: ${JSON.stringify(`${base}/json`)}, dom_id: "#swagger-ui", deepLinking: true }); };\n`),
  );
  app.get(DOCUMENTATION, hidden, async (_request, reply) =>
    reply.type("text/html; charset=utf-8").send(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>TruBudget's API on flowstore</title><link rel="stylesheet" href="${options.uiAssets}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div><script src="${options.uiAssets}/swagger-ui-bundle.js"></script><script src="${base}/start.js"></script></body>
</html>
`),
  );
}
