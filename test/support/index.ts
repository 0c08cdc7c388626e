/**
 * The general test helpers, one import for a suite: temporary directories with cleanup (temp-dir.ts),
 * bounded waiting on conditions (eventually.ts), free ports (ports.ts). Backend servers (Redis,
 * PostgreSQL) are started by test/setup/, the flowstore CLI by test/cli/spawn.ts, HTTP servers in this
 * process by test/http/harness.ts.
 */
export * from "./eventually.js";
export * from "./ports.js";
export * from "./temp-dir.js";
