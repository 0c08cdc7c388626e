export { SYSTEM, userActor, allows, type Actor, type Permissions } from "./actor.js";
export { GlobalPermissions, assertIdentityExists, type GlobalPermissionsOptions, type IdentityDirectory } from "./global.js";
export { ACCESS_INTENTS, IntentRegistry, requestedIntent, type AccessIntent, type DeclaredIntents, type Intent } from "./intents.js";
