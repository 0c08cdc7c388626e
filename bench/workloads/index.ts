/** Every benchmark workload, in the order `npm run bench` runs them. Add yours here. */
import type { Workload } from "../harness.js";
import { archive } from "./archive.js";
import { http } from "./http.js";
import { kv } from "./kv.js";
import { processData } from "./process-data.js";
import { resources } from "./resources.js";
import { workflow } from "./workflow.js";

export const workloads: Workload[] = [kv, resources, workflow, http, processData, archive];
