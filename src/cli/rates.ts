/**
 * `flowstore rates import-ecb <file>` and `flowstore rates set <from> <to> <date> <rate>`: exchange rates
 * written directly to the store as the system actor (stop the server first for an embedded store); a
 * running server takes the same through `POST /api/v1/exchange-rates/ecb` and `PUT /api/v1/exchange-rates`.
 * Each prints {written} as one JSON line. An import is one commit (workflow/rates.ts): killed or failed
 * before it prints, it wrote nothing, and is run again whole; `import-ecb` says on stderr how many rates it
 * is committing once the file is parsed.
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { SYSTEM } from "../access/actor.js";
import { parseEcbCsv } from "../workflow/rates.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";

export function ratesCommands(program: Command): void {
  const rates = program.command("rates").description("exchange rates as dated data (as the system actor)");
  storeOptions(rates.command("import-ecb <file>").description("import the ECB's eurofxref-hist.csv (Date,USD,JPY,…; rates from EUR); prints {written}")).action(
    async (file: string, options: StoreOptions) => {
      const rates = parseEcbCsv(await readFile(file, "utf8"));
      const written = await withStore(options, (store) => {
        process.stderr.write(`flowstore: importing ${rates.length} rates in one commit (all or none)\n`);
        return store.rates.put(SYSTEM, rates, "csv");
      });
      print({ written });
    },
  );
  storeOptions(rates.command("set <from> <to> <date> <rate>").description("write one rate: 1 <from> = <rate> <to>, valid from <date> (YYYY-MM-DD) on; prints {written}")).action(
    async (from: string, to: string, date: string, rate: string, options: StoreOptions) => {
      print({ written: await withStore(options, (store) => store.rates.put(SYSTEM, [{ from, to, date, rate }])) });
    },
  );
}
