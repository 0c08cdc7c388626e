/**
 * The configuration schema (src/config.ts): the README's environment table is the generated one, the
 * schema's defaults are the domains' constants, every FLOWSTORE_* variable src/ names is declared, and a
 * bad value is refused with an error naming its variable.
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { expect, it } from "vitest";
import { CONFIG, environmentTable, readEnv, readFlag } from "../src/config.js";
import { ConfigurationError } from "../src/errors.js";
import { DEFAULT_PRESSURE } from "../src/http/conventions.js";
import { DEFAULT_LOGIN_RATE_LIMITS } from "../src/http/rate-limit.js";
import { DEFAULT_BODY_LIMIT, DEFAULT_HOST, DEFAULT_TIMEOUTS } from "../src/http/server.js";
import { DEFAULT_REFRESH_TTL_SECONDS, DEFAULT_TOKEN_TTL_SECONDS } from "../src/identity/index.js";
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from "../src/cli/serve.js";
import { DEFAULT_MAX_DOCUMENT_BYTES } from "../src/workflow/documents.js";
import { DEFAULT_KEEP_NOTIFICATIONS } from "../src/workflow/notifications.js";
import { DEFAULT_ORGANIZATION } from "../src/http/trubudget/index.js";
import { SUBSCRIPTION_DEFAULTS } from "../src/subscriptions/subscriptions.js";
import { RESOLVE_DEFAULTS } from "../src/subscriptions/webhook-target.js";

const ROOT = resolve(import.meta.dirname, "..");

it("the README's environment table is the one generated from the schema", async () => {
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("| variable | option | default | what |");
  const end = readme.indexOf("\n<!-- end of environment table -->", start);
  expect(start).toBeGreaterThan(0);
  expect(readme.slice(start, end)).toBe(environmentTable());
});

it("the schema's defaults are the domains' constants", () => {
  const expected: Partial<Record<keyof typeof CONFIG, number | string>> = {
    FLOWSTORE_HOST: DEFAULT_HOST,
    FLOWSTORE_WEBHOOK_LEASE_MS: SUBSCRIPTION_DEFAULTS.leaseMs,
    FLOWSTORE_WEBHOOK_RETRY_MS: SUBSCRIPTION_DEFAULTS.retryBaseMs,
    FLOWSTORE_WEBHOOK_ATTEMPTS: SUBSCRIPTION_DEFAULTS.maxAttempts,
    FLOWSTORE_WEBHOOK_LOOKUPS: RESOLVE_DEFAULTS.concurrent,
    FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS: RESOLVE_DEFAULTS.timeoutMs,
    FLOWSTORE_ORGANIZATION: DEFAULT_ORGANIZATION,
    FLOWSTORE_BODY_LIMIT: DEFAULT_BODY_LIMIT,
    FLOWSTORE_TOKEN_TTL: DEFAULT_TOKEN_TTL_SECONDS,
    FLOWSTORE_REFRESH_TTL: DEFAULT_REFRESH_TTL_SECONDS,
    FLOWSTORE_LOGIN_LIMIT_USER: DEFAULT_LOGIN_RATE_LIMITS.perUser.max,
    FLOWSTORE_LOGIN_LIMIT_ADDRESS: DEFAULT_LOGIN_RATE_LIMITS.perAddress.max,
    FLOWSTORE_HEADERS_TIMEOUT: DEFAULT_TIMEOUTS.headersSeconds,
    FLOWSTORE_REQUEST_TIMEOUT: DEFAULT_TIMEOUTS.requestSeconds,
    FLOWSTORE_KEEP_ALIVE_TIMEOUT: DEFAULT_TIMEOUTS.keepAliveSeconds,
    FLOWSTORE_MAX_DOCUMENT_BYTES: DEFAULT_MAX_DOCUMENT_BYTES,
    FLOWSTORE_KEEP_NOTIFICATIONS: DEFAULT_KEEP_NOTIFICATIONS,
    FLOWSTORE_SHUTDOWN_GRACE: DEFAULT_SHUTDOWN_GRACE_SECONDS,
    FLOWSTORE_MAX_EVENT_LOOP_DELAY: DEFAULT_PRESSURE.maxEventLoopDelayMs,
    FLOWSTORE_RETRY_AFTER: DEFAULT_PRESSURE.retryAfterSeconds,
  };
  for (const [name, value] of Object.entries(expected)) expect((CONFIG as Record<string, { default?: string }>)[name]!.default, name).toBe(String(value));
});

it("every FLOWSTORE_* variable src/ names is declared in the schema", () => {
  const out = execFileSync("grep", ["-rhoE", "FLOWSTORE_[A-Z_]+[A-Z]", join(ROOT, "src")], { encoding: "utf8" });
  const named = new Set(out.split("\n").filter(Boolean));
  for (const name of named) expect(Object.keys(CONFIG), name).toContain(name);
});

it("a bad value is a ConfigurationError naming the variable; unset and empty are undefined", () => {
  expect(readEnv("FLOWSTORE_PORT", {})).toBeUndefined();
  expect(readEnv("FLOWSTORE_PORT", { FLOWSTORE_PORT: "" })).toBeUndefined();
  expect(readEnv("FLOWSTORE_PORT", { FLOWSTORE_PORT: "8081" })).toBe("8081");
  for (const [name, value] of [
    ["FLOWSTORE_PROGRESS_SECONDS", "soon"],
    ["FLOWSTORE_TOKEN_TTL", "0"],
    ["FLOWSTORE_LOG_LEVEL", "loud"],
    ["FLOWSTORE_WEBHOOK_LOOKUPS", "0"],
    ["FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS", "2s"],
  ] as const) {
    let error: unknown;
    try {
      readEnv(name, { [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).message).toContain(name);
    expect((error as ConfigurationError).field).toBe(name);
  }
  expect(readFlag("FLOWSTORE_TRUBUDGET_API", { FLOWSTORE_TRUBUDGET_API: "Yes" })).toBe(true);
  expect(readFlag("FLOWSTORE_TRUBUDGET_API", {})).toBe(false);
  expect(() => readFlag("FLOWSTORE_TRUBUDGET_API", { FLOWSTORE_TRUBUDGET_API: "maybe" })).toThrow(/FLOWSTORE_TRUBUDGET_API/);
});
