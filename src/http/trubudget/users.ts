/**
 * Users as TruBudget's API has them (api/src/user_*.ts, v2.18) on flowstore's identity domain, through
 * the same commands as the native /users routes: `user.list` (users and groups, as its frontend's user
 * pickers want them), `user.changePassword`, `global.createUser`, `global.enableUser`,
 * `global.disableUser` (refused while the user has assignments: TruBudget's 412) and
 * `global.listAssignments`.
 *
 * A user's `permissions` are TruBudget's per-user intents: `user.changePassword` and `user.intent.*`
 * as flowstore keeps them (identity/user-permissions.ts; the user holds each on itself until changed,
 * `user.intent.listPermissions|grantPermission|revokePermission` read and change them), `user.authenticate`
 * held by the user while it is enabled (TruBudget's frontend tells disabled users by it) and `user.list`
 * by the user.
 */
import { Type, type Static } from "@sinclair/typebox";
import { ConflictError, FlowstoreError } from "../../errors.js";
import type { Permissions } from "../../access/actor.js";
import type { GroupRecord, UserRecord } from "../../identity/index.js";
import { DISPLAY_NAME_MAX, MAX_PAGE, ORGANIZATION_MAX, PASSWORD_MAX, PASSWORD_MIN, type PasswordRule } from "../../identity/index.js";
import { IdentityId } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { setSessionCookies, trubudgetClaims } from "./auth.js";
import { Envelope, ok, PreconditionError, Reply } from "./envelope.js";
import { organizationOf } from "./network.js";
import { fieldsAt } from "./workflow-common.js";

const DisplayName = Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX });
/** A new password under a rule (identity/ids.ts): `test` accepts any non-empty one, as TruBudget outside production. */
const Password = (rule: PasswordRule) => Type.String({ minLength: rule === "test" ? 1 : PASSWORD_MIN, maxLength: PASSWORD_MAX });
const strict = { additionalProperties: false } as const;

const NewUser = (rule: PasswordRule) =>
  Envelope(
    Type.Object(
      {
        user: Type.Object({ id: IdentityId, displayName: DisplayName, organization: Type.String({ minLength: 1, maxLength: ORGANIZATION_MAX }), password: Password(rule) }, strict),
      },
      strict,
    ),
  );
const UserIdBody = Envelope(Type.Object({ userId: IdentityId }, strict));
const PasswordChange = (rule: PasswordRule) => Envelope(Type.Object({ userId: IdentityId, newPassword: Password(rule) }, strict));
const AssignmentsQuery = Type.Object({ userId: IdentityId });
/** TruBudget's per-user intents (its authz/intents.ts userIntents). */
const TB_USER_INTENTS = ["user.list", "user.authenticate", "user.changePassword", "user.intent.listPermissions", "user.intent.grantPermission", "user.intent.revokePermission"];
const UserIntentChange = Envelope(Type.Object({ userId: IdentityId, identity: IdentityId, intent: Type.Unsafe<string>({ type: "string", enum: TB_USER_INTENTS }) }, strict));

const Identity = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  organization: Type.Optional(Type.String()),
  isGroup: Type.Boolean(),
  permissions: Type.Record(Type.String(), Type.Array(Type.String())),
});
const Done = Reply(Type.Object({}));

/** Every record of a paged identity listing (TruBudget's lists are whole). */
export async function all<T>(list: (page: { limit: number; cursor?: string }) => Promise<{ items: T[]; nextCursor?: string | null }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await list({ limit: MAX_PAGE, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/**
 * A user's per-user intents as TruBudget shows them: those flowstore keeps (identity/user-permissions.ts),
 * `user.authenticate` held by the user while it is enabled, and `user.list` by the user.
 */
export const userIntentsShown = (u: UserRecord, kept: Permissions): Permissions => ({
  "user.list": [u.id],
  "user.authenticate": u.enabled ? [u.id] : [],
  ...kept,
});

/** A user as TruBudget lists it, with its per-user intents (see the top). */
export function listedUser(u: UserRecord, node: string, kept: Permissions): Static<typeof Identity> {
  return { id: u.id, displayName: u.displayName, organization: organizationOf(u, node), isGroup: false, permissions: userIntentsShown(u, kept) };
}

export const listedGroup = (g: GroupRecord): Static<typeof Identity> => ({ id: g.id, displayName: g.displayName, isGroup: true, permissions: {} });

export interface UserRouteOptions {
  /** The node's organization. */
  readonly organization: string;
  /** The rule of new passwords (default `standard`; `test` only by the operator's --trubudget-test-passwords). */
  readonly passwordRule?: PasswordRule;
}

export const userRoutes: RoutePlugin<UserRouteOptions> = async (app, options) => {
  const node = options.organization;
  const passwordRule = options.passwordRule ?? "standard";
  const { identity, tokens } = app.flowstore;

  app.get("/user.list", { schema: { response: { 200: Reply(Type.Object({ items: Type.Array(Identity) })) } } }, async (request) => {
    const [users, groups] = await Promise.all([all((p) => identity.listUsers(request.actor, p)), all((p) => identity.listGroups(request.actor, p))]);
    const kept = await Promise.all(users.map((u) => identity.userPermissions.shown(u.id)));
    return ok({ items: [...users.map((u, i) => listedUser(u, node, kept[i]!)), ...groups.map(listedGroup)] });
  });

  app.post(
    "/global.createUser",
    {
      schema: {
        body: NewUser(passwordRule),
        response: { 200: Reply(Type.Object({ user: Type.Object({ id: Type.String(), displayName: Type.String(), organization: Type.String() }) })) },
      },
    },
    async (request) => {
      const { id, displayName, organization, password } = request.body.data.user;
      // The network knows one organization, the node's (TruBudget checks the organization's stream exists).
      if (organization !== node) throw new PreconditionError(`organization does not exist: this node's organization is ${node}`, "data.user.organization");
      const user = await identity.createUser(request.actor, { id, displayName, organization, password }, { passwordRule });
      return ok({ user: { id: user.id, displayName: user.displayName, organization: user.organization ?? "" } });
    },
  );

  app.post("/global.enableUser", { schema: { body: UserIdBody, response: { 200: Done } } }, async (request) => {
    await identity.enableUser(request.actor, request.body.data.userId);
    return ok({});
  });

  app.post("/global.disableUser", { schema: { body: UserIdBody, response: { 200: Done } } }, async (request) => {
    try {
      await app.flowstore.disableUser(request.actor, request.body.data.userId);
    } catch (e) {
      // TruBudget refuses a user with assignments as a failed precondition (412), flowstore as a conflict.
      if (e instanceof ConflictError && e.field === "assignments") throw new FlowstoreError("precondition_failed", 412, e.message, "data.userId");
      throw e;
    }
    return ok({});
  });

  app.post("/user.changePassword", { schema: { body: PasswordChange(passwordRule), response: { 200: Done } } }, async (request, reply) => {
    const { userId, newPassword } = request.body.data;
    await identity.setPassword(request.actor, userId, newPassword, { passwordRule });
    // A new password revokes every token of the user; a user changing its own stays logged in here
    // (TruBudget's frontend goes on with its cookie), with a new session.
    if (userId === request.actor.id) setSessionCookies(request, reply, await tokens.issue(userId, { claims: trubudgetClaims(node) }));
    return ok({});
  });

  // TruBudget's per-user intents of one account (its user_permission*.ts).
  app.get(
    "/user.intent.listPermissions",
    { schema: { querystring: AssignmentsQuery, response: { 200: Reply(Type.Record(Type.String(), Type.Array(Type.String()))) } } },
    async (request) => {
      const { userId } = request.query;
      const kept = await identity.userPermissions.list(request.actor, userId);
      return ok(userIntentsShown(await identity.getUser(userId), kept));
    },
  );
  for (const action of ["grant", "revoke"] as const) {
    app.post(`/user.intent.${action}Permission`, { schema: { body: UserIntentChange, response: { 200: Done } } }, async (request) => {
      const { userId, identity: grantee, intent } = request.body.data;
      await fieldsAt(
        (f) => `data.${f}`,
        () => identity.userPermissions[action](request.actor, userId, intent, grantee),
      );
      return ok({});
    });
  }

  app.get("/global.listAssignments", { schema: { querystring: AssignmentsQuery, response: { 200: Reply(Assignments) } } }, async (request) => {
    const { userId } = request.query;
    const assigned = await app.flowstore.assignmentsOf(request.actor, userId);
    const of = (type: string) => assigned.filter((a) => a.type === type);
    return ok({
      userId,
      projects: of("project").map((a) => ({ id: a.ids[0]!, displayName: a.displayName ?? "", status: a.status })),
      subprojects: of("subproject").map((a) => ({ id: a.ids[1]!, projectId: a.ids[0]!, displayName: a.displayName ?? "", status: a.status })),
      workflowitems: of("workflowitem").map((a) => ({ id: a.ids[2]!, projectId: a.ids[0]!, subprojectId: a.ids[1]!, displayName: a.displayName ?? "", status: a.status })),
    });
  });
};

const Assigned = (parents: readonly string[]) =>
  Type.Object({ id: Type.String(), ...Object.fromEntries(parents.map((p) => [p, Type.String()])), displayName: Type.String(), status: Type.String() });
const Assignments = Type.Object({
  userId: Type.String(),
  projects: Type.Array(Assigned([])),
  subprojects: Type.Array(Assigned(["projectId"])),
  workflowitems: Type.Array(Assigned(["projectId", "subprojectId"])),
});
