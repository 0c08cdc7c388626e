/**
 * Erasing a data subject (issue 26, part 2; compose/erasure.ts): `POST /subjects/{subjectId}/erase`
 * destroys the subject's key, so the personal fields sealed under it read as erased everywhere, and
 * answers the receipt; `GET /subjects/{subjectId}/erasure` answers it again, to be shown to the subject.
 * Both need `global.eraseSubject` (root always), checked by the store.
 */
import { Type } from "@sinclair/typebox";
import { ErasureReceipt, ResourceId } from "../../resources/model/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

const tags = ["subjects"];
const params = Type.Object({ subjectId: ResourceId });

export const subjectRoutes: RoutePlugin = async (app) => {
  app.post(
    "/subjects/:subjectId/erase",
    {
      schema: {
        tags,
        operationId: "eraseSubject",
        summary:
          "Erase a data subject (global.eraseSubject; a subject that is a user account also needs outranking it, as disabling it does, else 403 and nothing erased): its key is destroyed, its personal fields read as erased in state, history, archives and later exports; every chain still verifies. Answers the receipt (again, finished, when erased before)",
        params,
        response: { 200: ErasureReceipt, ...problems(400, 403, 404) },
      },
    },
    async (request) => app.flowstore.eraseSubject(request.actor, request.params.subjectId),
  );

  app.get(
    "/subjects/:subjectId/erasure",
    {
      schema: {
        tags,
        operationId: "getSubjectErasure",
        summary: "The receipt of a data subject's erasure (global.eraseSubject): what was erased, when, by whom, each chain's head after",
        params,
        response: { 200: ErasureReceipt, ...problems(400, 403, 404) },
      },
    },
    async (request) => app.flowstore.erasureReceipt(request.actor, request.params.subjectId),
  );
};
