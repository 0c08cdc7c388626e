/** Options shared by the commands that open a store, each with its environment fallback. */
import { Option, type Command } from "commander";
import { UsageError } from "./exit.js";

export interface StoreOptions {
  data: string;
  store?: string;
}

export function storeOptions(command: Command): Command {
  return command
    .addOption(new Option("--data <dir>", "data directory (token secret; the embedded store)").env("FLOWSTORE_DATA").default("./data"))
    .addOption(
      new Option("--store <url>", "store URL: memory:, lmdb:<dir>, redis://host:port, redis-cluster://h:p,h:p (default: lmdb in --data)").env(
        "FLOWSTORE_STORE",
      ),
    );
}

export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535) throw new UsageError(`invalid port ${JSON.stringify(value)}: an integer from 0 to 65535`);
  return n;
}
