/**
 * A PostgreSQL store's options and its URL: `postgres://user@host:port/db[?schema=…&poolSize=…&timeoutMs=…]`
 * is split into the driver's connection string (its own parameters, e.g. sslmode, stay in it) and
 * flowstore's options, which are then checked and given their defaults.
 */
import { ValidationError } from "../../errors.js";

export interface PostgresKvOptions {
  /** The schema holding flowstore's tables (created if needed; default "public"). */
  readonly schema?: string;
  /** Most connections the store opens (default 10). */
  readonly poolSize?: number;
  /** Upper bound of any one store call, in ms, after which it fails with UnavailableError (default 10000). */
  readonly timeoutMs?: number;
}

const INT_OPTIONS = ["poolSize", "timeoutMs"] as const;

/** Splits a `postgres://` / `postgresql://` URL into the driver's connection string and our options. */
export function parsePostgresUrl(url: string): { connectionString: string; options: PostgresKvOptions } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError(`not a postgres URL: expected postgres://user@host:port/db[?schema=…]`, "store");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new ValidationError(`not a postgres URL (scheme ${parsed.protocol})`, "store");
  }
  const options: Record<string, string | number> = {};
  for (const name of [...parsed.searchParams.keys()]) {
    const value = parsed.searchParams.get(name)!;
    if (name === "schema") options.schema = value;
    else if ((INT_OPTIONS as readonly string[]).includes(name)) {
      if (!/^\d+$/.test(value)) throw new ValidationError(`${name} must be a non-negative integer`, name);
      options[name] = Number(value);
    } else continue; // the driver's own parameters (sslmode, application_name, …) stay in the URL
    parsed.searchParams.delete(name);
  }
  return { connectionString: parsed.toString(), options: options as PostgresKvOptions };
}

export function resolvePostgresKvOptions(options: PostgresKvOptions): Required<PostgresKvOptions> {
  const schema = options.schema ?? "public";
  if (typeof schema !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ValidationError("a postgres schema is 1-63 letters, digits or '_', not starting with a digit", "schema");
  }
  const poolSize = options.poolSize ?? 10;
  const timeoutMs = options.timeoutMs ?? 10_000;
  for (const [field, v] of [
    ["poolSize", poolSize],
    ["timeoutMs", timeoutMs],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new ValidationError(`${field} must be a positive integer`, field);
  }
  return { schema, poolSize, timeoutMs };
}
