/**
 * The registry of global intents (the intents that are not about one resource), after TruBudget's
 * `global.*` intents. Each domain declares the global intents it checks once, as a constant of its own
 * layer (identity: `IDENTITY_INTENTS`, archive: `ARCHIVE_INTENTS`, process data: `PROCESS_DATA_INTENTS`,
 * a resources schema: the create intents of its root types); access declares its own (`ACCESS_INTENTS`).
 * Where the store is assembled, the domains' lists are added to one registry: it is what grants are
 * validated against, what the root user is given, and what `GET /me` reports.
 *
 * The type `Intent` is derived from the same lists: each layer adds its list to `DeclaredIntents` by
 * declaration merging beside its constant (`declare module "../access/intents.js"`), so access names no
 * layer above it, and `GlobalPermissions.has`/`assert`/`grant`/`revoke` take an `Intent`: a misspelt
 * intent fails tsc. A schema's create intents (`global.create<RootType>`) are derived from its
 * declaration (resources/model/schema.ts `CreateIntentOf`); the workflow and tenancy schemas add theirs.
 */

/**
 * Reading and changing global permissions themselves; `global.grantAllPermissions` grants every intent
 * at once (TruBudget's intent of the same name), apart from `global.grantPermission` (one at a time).
 */
export const ACCESS_INTENTS = ["global.listPermissions", "global.grantPermission", "global.revokePermission", "global.grantAllPermissions"] as const;
export type AccessIntent = (typeof ACCESS_INTENTS)[number];

/**
 * An intent that was split: a store written before the split holds `from` where it now needs each of
 * `to` as well, so every holder of `from` is granted `to` once, on open (GlobalPermissions.migrateSplits).
 */
export interface IntentSplit {
  readonly from: string;
  readonly to: readonly string[];
}

/** access's own split: `global.grantAllPermissions` was part of `global.grantPermission` until issue 28. */
export const ACCESS_SPLITS: readonly IntentSplit[] = [{ from: "global.grantPermission", to: ["global.grantAllPermissions"] }];

/**
 * The global intents each layer declares, by layer: every layer that declares a list adds it here
 * (declaration merging), so this interface is the union of the declared lists, whatever imports it.
 */
export interface DeclaredIntents {
  access: AccessIntent;
}

/** A declared global intent (`global.<name>`), one of the lists above: a typo fails tsc. */
export type Intent = DeclaredIntents[keyof DeclaredIntents];

/**
 * An intent named by a request (an HTTP body), not yet checked: `GlobalPermissions.grant`/`revoke`
 * refuse one the registry lacks (400 naming the field), so it may be passed where an `Intent` is taken.
 */
export function requestedIntent(intent: string): Intent {
  return intent as Intent;
}

const GLOBAL_INTENT = /^global\.[A-Za-z][A-Za-z0-9]*$/;

export class IntentRegistry {
  readonly #intents = new Set<string>(ACCESS_INTENTS);

  /** A registry holding access's own intents and every given domain list. */
  constructor(...domains: readonly (readonly string[])[]) {
    for (const d of domains) this.add(d);
  }

  /** Adds a domain's intents (each `global.<name>`; adding one twice is harmless). Answers this registry. */
  add(intents: readonly string[]): this {
    for (const i of intents) {
      if (!GLOBAL_INTENT.test(i)) throw new Error(`${JSON.stringify(i)} is not a global intent (global.<name>)`);
      this.#intents.add(i);
    }
    return this;
  }

  has(intent: string): boolean {
    return this.#intents.has(intent);
  }

  /** Every registered intent, in the order the domains added them. */
  list(): readonly string[] {
    return [...this.#intents];
  }
}
