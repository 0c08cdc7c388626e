/** Every benchmark workload, in the order `npm run bench` runs them. Add yours here. */
import type { Workload } from "../harness.js";
import { archive } from "./archive.js";
import { kv } from "./kv.js";
import { processData } from "./process-data.js";

export const workloads: Workload[] = [kv, processData, archive];
