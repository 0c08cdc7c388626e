/** Every benchmark workload, in the order `npm run bench` runs them. Add yours here. */
import type { Workload } from "../harness.js";
import { analytics } from "./analytics.js";
import { archive } from "./archive.js";
import { erasure } from "./erasure.js";
import { http } from "./http.js";
import { kv } from "./kv.js";
import { pagination } from "./pagination.js";
import { processData } from "./process-data.js";
import { resources } from "./resources.js";
import { scale } from "./scale.js";
import { tlog } from "./tlog.js";
import { trubudget } from "./trubudget.js";
import { verify } from "./verify.js";
import { visibility } from "./visibility.js";
import { workflow } from "./workflow.js";

export const workloads: Workload[] = [kv, resources, workflow, pagination, http, processData, archive, verify, visibility, trubudget, scale, tlog, analytics, erasure];
