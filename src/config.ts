/**
 * The configuration schema: every `FLOWSTORE_*` environment variable, declared once (name, TypeBox type,
 * the `serve` option it backs, default, what it does). The CLI's options take their environment fallback,
 * default and description from here (`cli/options.ts configOption`), `readEnv` parses a variable with a
 * clear error naming it, and the README's environment table is generated from it (`environmentTable`; a
 * test holds the README to it). Defaults that a domain declares (token lifetimes, limits) are given here
 * as the same literals, and a test holds each to its domain's constant.
 *
 * A bottom layer (like errors.ts): nothing here imports a domain, so the CLI and the HTTP server both can.
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ConfigurationError } from "./errors.js";

/** A whole number of seconds, bytes, milliseconds or a count, as the environment spells it. */
const Count = (minimum = 0) => Type.String({ pattern: "^[0-9]{1,9}$", minimum, description: `an integer of at least ${minimum}` });
const Text = () => Type.String({ description: "text" });
const Flag = () =>
  Type.Union([Type.Literal(""), Type.Literal("0"), Type.Literal("1"), Type.Literal("true"), Type.Literal("false"), Type.Literal("yes"), Type.Literal("no")], {
    description: "1 or 0",
  });
const Level = () =>
  Type.Union(
    ["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l)),
    { description: "a pino level" },
  );

export interface Variable {
  readonly type: TSchema;
  /** The `serve` (or store command) option that reads the variable, with its argument. */
  readonly option?: string;
  /** The default as the CLI passes it (a string), when there is one. */
  readonly default?: string;
  /** The default as the README shows it, when it is not `default` itself. */
  readonly shownDefault?: string;
  readonly doc: string;
  /** Shown with the variables before it that share its row in the README (a pair or triple of one kind). */
  readonly row?: string;
}

const v = <T extends Variable>(x: T): T => x;

export const CONFIG = {
  FLOWSTORE_DATA: v({ type: Text(), option: "--data <dir>", default: "./data", doc: "data directory: the LMDB store and the key files" }),
  FLOWSTORE_STORE: v({ type: Text(), option: "--store <url>", shownDefault: "lmdb:<data>", doc: "store URL (see Backends)" }),
  FLOWSTORE_HOST: v({ type: Text(), option: "--host <host>", default: "127.0.0.1", doc: "address to listen on" }),
  FLOWSTORE_PORT: v({ type: Count(), option: "--port <port>", default: "8080", doc: "port to listen on" }),
  FLOWSTORE_METRICS_PORT: v({ type: Count(), option: "--metrics-port <port>", shownDefault: "(none: on the API port)", doc: "serve `/metrics` apart" }),
  FLOWSTORE_METRICS_TOKEN_FILE: v({
    type: Text(),
    option: "--metrics-token-file <file>",
    shownDefault: "(none: root's access token only)",
    doc: "a file holding the bearer token a scraper sends for `/metrics` on the API port (16+ characters)",
  }),
  FLOWSTORE_TRUST_PROXY: v({
    type: Text(),
    option: "--trust-proxy <addresses>",
    shownDefault: "(none)",
    doc: "reverse proxies whose X-Forwarded-* headers are believed (`loopback`, addresses or CIDRs, comma-separated): behind TLS, cookies are then Secure",
  }),
  FLOWSTORE_LOG_LEVEL: v({ type: Level(), option: "--log-level <level>", default: "info", doc: "pino level" }),
  FLOWSTORE_SHUTDOWN_GRACE: v({ type: Count(), option: "--shutdown-grace <seconds>", default: "10", doc: "seconds in-flight requests get after SIGTERM/SIGINT" }),
  FLOWSTORE_BODY_LIMIT: v({ type: Count(1), option: "--body-limit <bytes>", default: "1048576", doc: "largest request body (413 beyond)" }),
  FLOWSTORE_TOKEN_TTL: v({ type: Count(1), option: "--token-ttl <seconds>", default: "900", doc: "session token lifetimes (seconds)" }),
  FLOWSTORE_REFRESH_TTL: v({ type: Count(1), option: "--refresh-ttl <seconds>", default: "86400", doc: "session token lifetimes (seconds)", row: "FLOWSTORE_TOKEN_TTL" }),
  FLOWSTORE_LOGIN_LIMIT_USER: v({
    type: Count(),
    option: "--login-limit-user <n>",
    default: "10",
    doc: "token refreshes a minute per user (0: none); failed log-ins are counted by the log-in guard (docs/security.md)",
  }),
  FLOWSTORE_LOGIN_LIMIT_ADDRESS: v({
    type: Count(),
    option: "--login-limit-address <n>",
    default: "100",
    doc: "log-in and refresh requests a minute per address (0: none)",
  }),
  FLOWSTORE_TRUBUDGET_API: v({
    type: Flag(),
    option: "--trubudget-api",
    shownDefault: "off",
    doc: "`1` also serves TruBudget's API at `/api` (see Run TruBudget's frontend on flowstore)",
  }),
  FLOWSTORE_REQUIRE_IF_MATCH: v({
    type: Flag(),
    option: "--require-if-match",
    shownDefault: "off",
    doc: "`1` refuses a write to an existing resource of the native API sent without If-Match (428 Precondition Required)",
  }),
  FLOWSTORE_TRUBUDGET_TEST_PASSWORDS: v({
    type: Flag(),
    option: "--trubudget-test-passwords",
    shownDefault: "off",
    doc: "`1` lets TruBudget's API (`/api`) accept any non-empty password, as TruBudget outside production (its provisioning's test data); logged at start; never for a real node",
  }),
  FLOWSTORE_ORGANIZATION: v({
    type: Text(),
    option: "--organization <name>",
    default: "flowstore",
    doc: "the organization this node runs for (TruBudget's ORGANIZATION): root's, `network.list`'s, the only one `global.createUser` knows",
  }),
  FLOWSTORE_HEADERS_TIMEOUT: v({ type: Count(), option: "--headers-timeout <seconds>", default: "20", doc: "slow clients and idle connections (seconds)" }),
  FLOWSTORE_REQUEST_TIMEOUT: v({
    type: Count(),
    option: "--request-timeout <seconds>",
    default: "300",
    doc: "slow clients and idle connections (seconds)",
    row: "FLOWSTORE_HEADERS_TIMEOUT",
  }),
  FLOWSTORE_KEEP_ALIVE_TIMEOUT: v({
    type: Count(1),
    option: "--keep-alive-timeout <seconds>",
    default: "72",
    doc: "slow clients and idle connections (seconds)",
    row: "FLOWSTORE_HEADERS_TIMEOUT",
  }),
  FLOWSTORE_MAX_DOCUMENT_BYTES: v({ type: Count(1), option: "--max-document-bytes <bytes>", default: "104857600", doc: "largest document of a workflowitem" }),
  FLOWSTORE_KEEP_NOTIFICATIONS: v({ type: Count(1), option: "--keep-notifications <n>", default: "1000", doc: "notifications kept per user (the newest)" }),
  FLOWSTORE_FEED_REPAIR_SETTLE_MS: v({
    type: Count(),
    option: "--feed-repair-settle-ms <ms>",
    default: "1000",
    doc: "age after which a commit a killed process left out of the change feed is appended to it",
  }),
  FLOWSTORE_WEBHOOK_LEASE_MS: v({
    type: Count(1),
    option: "--webhook-lease-ms <ms>",
    default: "10000",
    doc: "how long a server holds a webhook subscription's delivery unless it renews it: the longest a fleet waits for a dead deliverer",
  }),
  FLOWSTORE_WEBHOOK_RETRY_MS: v({
    type: Count(1),
    option: "--webhook-retry-ms <ms>",
    default: "1000",
    doc: "a failed webhook delivery's first retry delay (doubled at each retry)",
  }),
  FLOWSTORE_WEBHOOK_ATTEMPTS: v({ type: Count(1), option: "--webhook-attempts <n>", default: "8", doc: "attempts of a webhook delivery before it goes to the dead letters" }),
  FLOWSTORE_WEBHOOK_LOOKUPS: v({
    type: Count(1),
    option: "--webhook-lookups <n>",
    default: "2",
    doc: "webhook host name lookups run at once at most, one of them a user's (below libuv's thread pool, `UV_THREADPOOL_SIZE`, 4 unless set: a lookup holds a thread until the system answers)",
  }),
  FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS: v({
    type: Count(1),
    option: "--webhook-lookup-timeout-ms <ms>",
    default: "2000",
    doc: "a webhook host name not resolved within this is refused (a failed delivery attempt); a lookup that found no free place within this is tried again later, no attempt counted",
  }),
  FLOWSTORE_WEBHOOK_ALLOW: v({
    type: Text(),
    option: "--webhook-allow <hosts>",
    shownDefault: "(none)",
    doc: "comma-separated host names, addresses and CIDRs webhooks may be POSTed to although loopback, private, link-local or otherwise internal (refused otherwise)",
  }),
  FLOWSTORE_LOG_ORIGIN: v({
    type: Text(),
    option: "--log-origin <name>",
    shownDefault: "flowstore.invalid/log/<key hash>",
    doc: "the transparency log's origin: its checkpoints' first line and the key name of their signature (a schema-less URL, no spaces or +)",
  }),
  FLOWSTORE_LOG_WITNESSES: v({
    type: Text(),
    option: "--log-witness <vkeys>",
    shownDefault: "(none)",
    doc: "comma-separated C2SP verifier keys (type 0x04, cosignature/v1) of the witnesses whose cosignatures the server keeps",
  }),
  FLOWSTORE_LOG_CHECKPOINT: v({
    type: Text(),
    option: "--log-checkpoint <file>",
    shownDefault: "(none)",
    doc: "a cosigned log checkpoint note kept outside the store: serve refuses a store whose log does not extend it",
  }),
  FLOWSTORE_CORS_ORIGINS: v({ type: Text(), option: "--cors-origin <origins>", shownDefault: "(none: CORS off)", doc: "comma-separated origins whose pages may call the API" }),
  FLOWSTORE_MAX_EVENT_LOOP_DELAY: v({
    type: Count(),
    option: "--max-event-loop-delay <ms>",
    default: "1000",
    doc: "answer 503 with Retry-After while the event loop lags more (0: never)",
  }),
  FLOWSTORE_RETRY_AFTER: v({ type: Count(1), option: "--retry-after <seconds>", default: "10", doc: "the Retry-After of an overload 503" }),
  FLOWSTORE_ROOT_PASSWORD: v({ type: Text(), doc: "creates root on an empty store (required then)" }),
  FLOWSTORE_JWT_SECRET: v({ type: Text(), shownDefault: "<data>/jwt-secret", doc: "signs sessions (32 bytes or more)" }),
  FLOWSTORE_PROCESS_DATA_KEY: v({ type: Text(), shownDefault: "<data>/process-data.key", doc: "seals process-data access tokens (base64, 32 bytes)" }),
  FLOWSTORE_ARCHIVE_KEY: v({ type: Text(), shownDefault: "<data>/archive-seal.key", doc: "seals archived projects (base64, 32 bytes)" }),
  FLOWSTORE_CHECKPOINT_KEY: v({ type: Text(), shownDefault: "<data>/checkpoint-key.pem", doc: "signs checkpoints (PKCS#8 PEM, Ed25519)" }),
  FLOWSTORE_WEBHOOK_KEY: v({
    type: Text(),
    shownDefault: "<data>/webhook-secrets.key",
    doc: "seals webhook secrets at rest (base64, 32 bytes; the same on every server of a fleet without a shared data directory)",
  }),
  FLOWSTORE_PASSWORD: v({ type: Text(), shownDefault: "stdin or a prompt", doc: "the password of `user add` and `user passwd`" }),
  FLOWSTORE_DEMO_PASSWORD: v({ type: Text(), default: "demo-password", doc: "the demo users' password" }),
  FLOWSTORE_PROGRESS_SECONDS: v({ type: Count(), default: "5", doc: "how often a command off a terminal writes a progress line (0: every step)" }),
} as const satisfies Record<`FLOWSTORE_${string}`, Variable>;

export type ConfigName = keyof typeof CONFIG;

/**
 * The variable's value from `env` (default: the process's), or undefined when it is unset or empty. A
 * value its type refuses is a ConfigurationError naming the variable.
 */
export function readEnv(name: ConfigName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name];
  if (value === undefined || value === "") return undefined;
  checkEnv(name, value);
  return value;
}

/** Throws a ConfigurationError naming the variable when `value` is not of its type. */
export function checkEnv(name: ConfigName, value: string): void {
  const { type } = CONFIG[name] as Variable;
  const raw = "anyOf" in type ? value.trim().toLowerCase() : value;
  if (!Value.Check(type, raw) || (type.minimum !== undefined && Number(raw) < (type.minimum as number))) {
    throw new ConfigurationError(`${name} must be ${type.description ?? "valid"}, not ${JSON.stringify(value)}`, name);
  }
}

/** A yes/no variable: true for 1/true/yes, false when unset or 0/false/no. */
export function readFlag(name: ConfigName, env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[name]?.trim().toLowerCase();
  if (value === undefined || value === "") return false;
  checkEnv(name, value);
  return ["1", "true", "yes"].includes(value);
}

/** The README's environment table (markdown), one row per variable or per group of variables sharing a row. */
export function environmentTable(): string {
  const rows: { names: string[]; options: string[]; defaults: string[]; doc: string }[] = [];
  for (const [name, variable] of Object.entries(CONFIG) as [ConfigName, Variable][]) {
    const option = variable.option?.split(" ")[0];
    const shown = variable.shownDefault ?? variable.default;
    const row = variable.row === undefined ? undefined : rows.find((r) => r.names[0] === variable.row);
    if (row) {
      row.names.push(name);
      if (option) row.options.push(option);
      if (shown !== undefined) row.defaults.push(shown);
    } else rows.push({ names: [name], options: option ? [option] : [], defaults: shown === undefined ? [] : [shown], doc: variable.doc });
  }
  const plain = (x: string) => x === "off" || x.startsWith("(") || (/\s/.test(x) && !x.startsWith("<"));
  const code = (xs: string[]) => xs.map((x) => (plain(x) ? x : `\`${x}\``)).join(", ");
  const line = (cells: string[]) => `|${cells.map((c) => (c === "" ? " " : ` ${c} `)).join("|")}|`;
  return ["| variable | option | default | what |", "|---|---|---|---|", ...rows.map((r) => line([code(r.names), code(r.options), code(r.defaults), r.doc]))].join("\n");
}

export type ConfigValue<N extends ConfigName> = Static<(typeof CONFIG)[N]["type"]>;
