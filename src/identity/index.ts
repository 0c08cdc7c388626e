export {
  Identity,
  IDENTITY_INTENTS,
  IDENTITY_SPLITS,
  CREATE_USER,
  CREATE_GROUP,
  ENABLE_USER,
  DISABLE_USER,
  LIST_ASSIGNMENTS,
  DEFAULT_PAGE,
  MAX_PAGE,
  type NewUser,
  type NewGroup,
  type UnknownMembers,
  type PageRequest,
  type IdentityOptions,
} from "./identity.js";
export type { UserRecord, GroupRecord, Page, PasswordReset } from "./records.js";
export {
  Tokens,
  DEFAULT_TOKEN_TTL_SECONDS,
  DEFAULT_REFRESH_TTL_SECONDS,
  refreshTokenUser,
  type ExtraClaims,
  type IssuedToken,
  type TokenOptions,
  type Verified,
} from "./tokens.js";
export { loadTokenSecret, SECRET_FILE } from "./secret.js";
export { type PasswordRule, ID_PATTERN, PASSWORD_MIN, PASSWORD_MAX, DISPLAY_NAME_MAX, MAX_GROUP_MEMBERS, ORGANIZATION_MAX } from "./ids.js";
export { hashPassword, verifyPassword } from "./password.js";
export { LoginGuard, DEFAULT_LOGIN_GUARD, type LoginGuardLimits } from "./login-guard.js";
export { UserPermissions, USER_INTENTS, DERIVED_USER_INTENTS, type UserIntent } from "./user-permissions.js";
