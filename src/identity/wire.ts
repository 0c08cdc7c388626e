/**
 * The public shapes of identity as TypeBox schemas: users and groups as answered and as created, their
 * pages and parameters, sessions (log in, refresh, the tokens answered), the caller (`/me`), and global
 * permissions. Each named one carries an `$id`, so a server registers it once as a named component and
 * refers to it wherever it appears; the HTTP routes and the client take their types from these same
 * declarations.
 *
 * Rule: a shape declared here is the only declaration of it; the limits come from ids.ts and identity.ts.
 */
import { Type, type Static } from "@sinclair/typebox";
import { PageOf, pageQueryOf } from "../wire.js";
import { DEFAULT_PAGE, MAX_PAGE } from "./identity.js";
import { DISPLAY_NAME_MAX, EMAIL_MAX, EMAIL_PATTERN, ID_PATTERN, MAX_GROUP_MEMBERS, ORGANIZATION_MAX, PASSWORD_MAX, PASSWORD_MIN } from "./ids.js";

/** A page of users or groups: `?cursor=&limit=` within identity's page limits. */
export const IdentityPageQuery = pageQueryOf({ default: DEFAULT_PAGE, max: MAX_PAGE });
export type IdentityPageQuery = Static<typeof IdentityPageQuery>;

/** A user or group id as a path parameter or body field. */
export const IdentityId = Type.String({ pattern: ID_PATTERN, minLength: 1, maxLength: 64, description: "1-64 of A-Z a-z 0-9 . _ @ -" });

/** The fields every identity has, as answered and as created (each kind adds its own). */
export const identityFields = { id: Type.String(), displayName: Type.String(), createdAt: Type.String({ format: "date-time" }) };
export const newIdentityFields = { id: IdentityId, displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }) };

// Users.

export const User = Type.Object(
  {
    ...identityFields,
    organization: Type.Optional(Type.String()),
    email: Type.Optional(
      Type.String({
        description:
          "the user's e-mail address, when given: stored sealed under the user's subject key, `(erased)` once the subject is erased; served only to the user itself and to holders of global.createUser (left out for everyone else)",
      }),
    ),
    enabled: Type.Boolean(),
    groups: Type.Array(Type.String()),
  },
  { $id: "User", title: "User" },
);
export type User = Static<typeof User>;

export const NewUser = Type.Object(
  {
    ...newIdentityFields,
    organization: Type.Optional(Type.String({ minLength: 1, maxLength: ORGANIZATION_MAX })),
    email: Type.Optional(Type.String({ pattern: EMAIL_PATTERN, maxLength: EMAIL_MAX, description: "personal data: stored sealed under the user's subject key" })),
    password: Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX }),
  },
  { additionalProperties: false, $id: "NewUser", title: "NewUser" },
);
export type NewUser = Static<typeof NewUser>;

const Password = Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX });

export const NewPassword = Type.Object(
  {
    password: Password,
    mustChange: Type.Optional(
      Type.Boolean({ description: "the user must choose a new password (POST /auth/password) before it can log in again (an administrator's reset; default false)" }),
    ),
  },
  { additionalProperties: false, $id: "NewPassword" },
);
export type NewPassword = Static<typeof NewPassword>;

export const DisableQuery = Type.Object(
  { force: Type.Optional(Type.Boolean({ description: "disable even while the user still has assignments" })) },
  { additionalProperties: false },
);

/** A resource assigned to a user (`GET /users/{u}/assignments`). */
export const Assignment = Type.Object(
  {
    type: Type.String({ description: "project, subproject or workflowitem" }),
    ids: Type.Array(Type.String(), { description: "the ids from the project down" }),
    displayName: Type.Optional(Type.String()),
    status: Type.String(),
  },
  { $id: "Assignment" },
);
export const Assignments = Type.Object({ items: Type.Array(Assignment) }, { $id: "Assignments" });
export type Assignments = Static<typeof Assignments>;

export const UserParams = Type.Object({ userId: IdentityId });
export const UserPage = PageOf(User, "UserPage");
export type UserPage = Static<typeof UserPage>;

// Groups.

export const Group = Type.Object(
  {
    ...identityFields,
    members: Type.Array(Type.String()),
  },
  { $id: "Group", title: "Group" },
);
export type Group = Static<typeof Group>;

export const NewGroup = Type.Object(
  {
    ...newIdentityFields,
    members: Type.Optional(Type.Array(IdentityId, { maxItems: MAX_GROUP_MEMBERS })),
  },
  { additionalProperties: false, $id: "NewGroup", title: "NewGroup" },
);
export type NewGroup = Static<typeof NewGroup>;

export const NewMember = Type.Object({ userId: IdentityId }, { additionalProperties: false, $id: "NewMember", title: "NewMember" });
export type NewMember = Static<typeof NewMember>;

export const GroupParams = Type.Object({ groupId: IdentityId });
export const MemberParams = Type.Object({ groupId: IdentityId, userId: IdentityId });
export const GroupPage = PageOf(Group, "GroupPage");
export type GroupPage = Static<typeof GroupPage>;

// The caller.

export const Me = Type.Object(
  {
    id: Type.String(),
    groups: Type.Array(Type.String()),
    intents: Type.Array(Type.String(), { description: "the global intents the caller holds, directly or through a group" }),
  },
  { $id: "Me", title: "Me" },
);

export const PasswordChange = Type.Object(
  {
    currentPassword: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }),
    password: Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX }),
  },
  { additionalProperties: false, $id: "PasswordChange" },
);
export type PasswordChange = Static<typeof PasswordChange>;

// Sessions (tokens.ts).

export const TokenRequest = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false, $id: "TokenRequest", title: "TokenRequest" },
);
export type TokenRequest = Static<typeof TokenRequest>;

export const RefreshRequest = Type.Object(
  { refreshToken: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false, $id: "RefreshRequest", title: "RefreshRequest" },
);
export type RefreshRequest = Static<typeof RefreshRequest>;

/** A user sets its own password proving the current one, without a session (`POST /auth/password`). */
export const PasswordChangeRequest = Type.Object(
  { username: Type.String({ minLength: 1, maxLength: 64 }), currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), password: Password },
  { additionalProperties: false, $id: "PasswordChangeRequest", title: "PasswordChangeRequest" },
);
export type PasswordChangeRequest = Static<typeof PasswordChangeRequest>;

export const TokenResponse = Type.Object(
  {
    token: Type.String({ description: "an access token (JWT) for Authorization: Bearer" }),
    expiresAt: Type.Integer({ description: "expiry of the access token, seconds since the epoch" }),
    refreshToken: Type.String({ description: "spend it at POST /auth/refresh for new tokens (once: it is rotated)" }),
    refreshExpiresAt: Type.Integer({ description: "expiry of the refresh token, seconds since the epoch" }),
    passwordReset: Type.Optional(
      Type.Object(
        { by: Type.String({ description: "the administrator who set it" }), at: Type.String({ format: "date-time" }) },
        { description: "on a login: another account set this user's password since the user last set its own; set your own (PUT /me/password)" },
      ),
    ),
  },
  { $id: "TokenResponse", title: "TokenResponse" },
);
export type TokenResponse = Static<typeof TokenResponse>;

// Global permissions.

export const PermissionMap = Type.Record(Type.String(), Type.Array(Type.String()), {
  $id: "Permissions",
  title: "Permissions",
  description: "intent → identities (user or group ids) holding it",
});
export type PermissionMap = Static<typeof PermissionMap>;

/** A global intent: `global.<name>`, one of the registry's. */
export type GlobalIntentName = `global.${string}`;

/** The body of a grant or revoke, naming one of `intents` (the registry's, known when a server starts). */
export function permissionChange(intents: readonly string[]) {
  const intent = Type.Unsafe<GlobalIntentName>({ type: "string", enum: [...intents], description: "a global intent" });
  return Type.Object({ intent, identity: IdentityId }, { additionalProperties: false, $id: "GlobalPermissionChange" });
}
export type PermissionChange = Static<ReturnType<typeof permissionChange>>;

export const GrantAll = Type.Object({ identity: IdentityId }, { additionalProperties: false, $id: "GrantAll" });
export const GrantedAll = Type.Object({ intents: Type.Array(Type.String()) }, { $id: "GrantedAll" });
