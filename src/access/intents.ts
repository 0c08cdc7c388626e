/**
 * The registry of global intents (the intents that are not about one resource), after TruBudget's
 * `global.*` intents. Each domain declares the global intents it checks once, as a constant of its own
 * layer (identity: `IDENTITY_INTENTS`, archive: `ARCHIVE_INTENTS`, process data: `PROCESS_DATA_INTENTS`,
 * a resources schema: the create intents of its root types); access declares its own (`ACCESS_INTENTS`).
 * Where the store is assembled, the domains' lists are added to one registry: it is what grants are
 * validated against, what the root user is given, and what `GET /me` reports.
 */

/** Reading and changing global permissions themselves. */
export const ACCESS_INTENTS = ["global.listPermissions", "global.grantPermission", "global.revokePermission"] as const;
export type AccessIntent = (typeof ACCESS_INTENTS)[number];

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
