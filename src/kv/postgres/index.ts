/** The PostgreSQL backend: the store (store.ts) and how its URL and options are read (url.ts). */
export { PostgresKv } from "./store.js";
export { parsePostgresUrl, resolvePostgresKvOptions, type PostgresKvOptions } from "./url.js";
