/**
 * Groups as TruBudget's API has them (api/src/group_*.ts, v2.18) on flowstore's identity domain:
 * `global.createGroup` (with its first members), `group.list`, `group.addUser` and `group.removeUser`
 * (several users at once; member ids unchecked as TruBudget's: a member no user has yet joins when the
 * user is created, identity.ts UnknownMembers "await"), `group.intent.listPermissions`. A change of several members is checked whole
 * before anything is written: the permission, the group and every user must be there, so bad input
 * writes nothing.
 *
 * TruBudget keeps per-group intents (`group.addUser`, `group.removeUser`, given to the group's creator);
 * flowstore has one rule for every group: the holders of `global.createGroup` change its members (when
 * they outrank it, identity.ts). `group.intent.listPermissions` answers that rule in TruBudget's shape:
 * each of the two intents held by the holders of `global.createGroup`.
 */
import { Type, type Static } from "@sinclair/typebox";
import { SYSTEM, type Actor } from "../../access/actor.js";
import { ValidationError } from "../../errors.js";
import { DISPLAY_NAME_MAX, MAX_GROUP_MEMBERS } from "../../identity/index.js";
import { IdentityId } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { dropsUnknown } from "./validation.js";
import { Envelope, ok, Reply } from "./envelope.js";
import { all } from "./users.js";

const strict = { additionalProperties: false } as const;
const UserIds = Type.Array(IdentityId, { maxItems: MAX_GROUP_MEMBERS });

/** TruBudget's route schema closes `data` of a new group (unknown properties beside `group` are dropped). */
const NewGroup = Envelope(
  dropsUnknown(Type.Object({ group: Type.Object({ id: IdentityId, displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }), users: UserIds }, strict) })),
);
const Members = Envelope(Type.Object({ groupId: IdentityId, userIds: UserIds }, strict));
type Members = Static<typeof Members>;

const Group = Type.Object({ id: Type.String(), displayName: Type.String(), users: Type.Array(Type.String()) });
const ListedGroup = Type.Object({
  groupId: Type.String(),
  displayName: Type.String(),
  users: Type.Array(Type.String()),
  permissions: Type.Record(Type.String(), Type.Array(Type.String())),
});

export const groupRoutes: RoutePlugin = async (app) => {
  const { identity } = app.flowstore;

  app.post("/global.createGroup", { schema: { body: NewGroup, response: { 200: Reply(Type.Object({ group: Group })) } } }, async (request) => {
    const { id, displayName, users } = request.body.data.group;
    const group = await identity.createGroup(request.actor, { id, displayName, members: users }, { unknownMembers: "await" });
    return ok({ group: { id: group.id, displayName: group.displayName, users: [...group.members] } });
  });

  app.get("/group.list", { schema: { response: { 200: Reply(Type.Object({ groups: Type.Array(ListedGroup) })) } } }, async (request) => {
    const groups = await all((p) => identity.listGroups(request.actor, p));
    return ok({ groups: groups.map((g) => ({ groupId: g.id, displayName: g.displayName, users: [...g.members], permissions: {} })) });
  });

  /** Checks a change of members whole (permission, group, every id not a group): nothing is written when any is wrong. */
  const checked = async (actor: Actor, data: Members["data"]): Promise<Members["data"]> => {
    const { groupId, userIds } = data;
    await identity.global.assert(actor, "global.createGroup");
    await identity.getGroup(groupId);
    const seen = new Set<string>();
    for (const [i, u] of userIds.entries()) {
      if (seen.has(u)) throw new ValidationError(`${u} is listed twice`, `data.userIds[${i}]`);
      seen.add(u);
      // TruBudget lists member ids unchecked (a user created later with the id is a member); a group is no member.
      const group = await identity.getGroup(u).catch(() => undefined);
      if (group) throw new ValidationError(`${u} is a group, not a user`, `data.userIds[${i}]`);
    }
    return data;
  };

  const GroupQuery = Type.Object({ groupId: IdentityId });
  app.get(
    "/group.intent.listPermissions",
    { schema: { querystring: GroupQuery, response: { 200: Reply(Type.Record(Type.String(), Type.Array(Type.String()))) } } },
    async (request) => {
      await identity.getGroup(request.query.groupId);
      // Shown to any authenticated user, as TruBudget's (its group_permissions_list.ts checks no intent).
      const administrators = (await identity.global.list(SYSTEM))["global.createGroup"] ?? [];
      return ok({ "group.addUser": [...administrators], "group.removeUser": [...administrators] });
    },
  );

  app.post("/group.addUser", { schema: { body: Members, response: { 200: Reply(Type.Object({})) } } }, async (request) => {
    const { groupId, userIds } = await checked(request.actor, request.body.data);
    const group = await identity.getGroup(groupId);
    const joining = userIds.filter((u) => !group.members.includes(u));
    if (group.members.length + joining.length > MAX_GROUP_MEMBERS) throw new ValidationError(`a group has at most ${MAX_GROUP_MEMBERS} members`, "data.userIds");
    for (const u of joining) await identity.addMember(request.actor, groupId, u, { unknownMembers: "await" });
    return ok({});
  });

  app.post("/group.removeUser", { schema: { body: Members, response: { 200: Reply(Type.Object({})) } } }, async (request) => {
    const { groupId, userIds } = await checked(request.actor, request.body.data);
    for (const u of userIds) await identity.removeMember(request.actor, groupId, u);
    return ok({});
  });
};
