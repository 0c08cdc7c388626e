/** POST /auth/token: username and password → a bearer token. Public. */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { problems } from "../problem.js";

export const TokenRequest = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export type TokenRequest = Static<typeof TokenRequest>;

export const TokenResponse = Type.Object({
  token: Type.String({ description: "a JWT for Authorization: Bearer" }),
  expiresAt: Type.Integer({ description: "expiry, seconds since the epoch" }),
});
export type TokenResponse = Static<typeof TokenResponse>;

export const authRoutes: FastifyPluginAsync = async (app) => {
  app.post<{ Body: TokenRequest }>(
    "/auth/token",
    {
      schema: {
        tags: ["auth"],
        summary: "Get a bearer token",
        body: TokenRequest,
        response: { 200: TokenResponse, ...problems(400, 401, 415) },
      },
    },
    async (request) => app.flowstore.tokens.login(request.body.username, request.body.password),
  );
};
