/** Options shared by the commands that open a store, each with its environment fallback. */
import { Option, type Command } from "commander";
import { CONFIG, type ConfigName, type Variable } from "../config.js";
import { STORE_URL_FORMS } from "../kv/open.js";
import { UsageError } from "./exit.js";

/**
 * The option a configuration variable backs (src/config.ts): its flag, description, environment fallback
 * and default, all from the one declaration.
 */
export function configOption(name: ConfigName): Option {
  const variable: Variable = CONFIG[name];
  if (variable.option === undefined) throw new Error(`${name} backs no option`);
  const option = new Option(variable.option, variable.doc).env(name);
  return variable.default === undefined ? option : option.default(variable.default);
}

export interface StoreOptions {
  data: string;
  store?: string;
}

/** `--store`'s help: the variable's, then every URL form a store is opened from (kv/open.ts). */
export function storeOption(): Option {
  const option = configOption("FLOWSTORE_STORE");
  const forms = STORE_URL_FORMS.map(([form, what]) => `  ${form}  ${what}`).join("\n");
  option.description = `${option.description}, one of:\n${forms}\n(default lmdb:<data>)`;
  return option;
}

export function storeOptions(command: Command): Command {
  return command.addOption(configOption("FLOWSTORE_DATA")).addOption(storeOption());
}

export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535) throw new UsageError(`invalid port ${JSON.stringify(value)}: an integer from 0 to 65535`);
  return n;
}
