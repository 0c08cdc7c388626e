export { Identity, IDENTITY_INTENTS, CREATE_USER, CREATE_GROUP, DEFAULT_PAGE, MAX_PAGE, type NewUser, type NewGroup, type PageRequest, type IdentityOptions } from "./identity.js";
export type { UserRecord, GroupRecord, Page, PasswordReset } from "./records.js";
export { Tokens, DEFAULT_TOKEN_TTL_SECONDS, DEFAULT_REFRESH_TTL_SECONDS, refreshTokenUser, type IssuedToken, type TokenOptions, type Verified } from "./tokens.js";
export { loadTokenSecret, SECRET_FILE } from "./secret.js";
export { ID_PATTERN, PASSWORD_MIN, PASSWORD_MAX, DISPLAY_NAME_MAX, MAX_GROUP_MEMBERS, ORGANIZATION_MAX } from "./ids.js";
export { hashPassword, verifyPassword } from "./password.js";
export { LoginGuard, DEFAULT_LOGIN_GUARD, type LoginGuardLimits } from "./login-guard.js";
