/** What the http workload's processes share: the data set, the credentials and the routes. */
import { subproject, type Tree } from "../tree.js";

export const ROOT_PASSWORD = "bench password 0123456789";
export const SECRET = new TextEncoder().encode("bench token secret that is long enough 0123456789");
export const P = "p1";
export const S1K = "s1k";
export const S10K = "s10k";
/** Empty at start: the create row adds workflowitems to it. */
export const SNEW = "snew";

/**
 * A subproject of 1,000 workflowitems (the list under load), one of 10,000 (the large data set for memory)
 * and an empty one (the creates).
 */
export function httpTree(): Tree {
  return {
    projects: [{ id: P, subprojects: [subproject(S1K, 1_000, "EUR", 100), subproject(S10K, 10_000, "EUR", 1_000), subproject(SNEW, 0)] }],
    updates: [],
  };
}

export const listPath = (s: string, limit = 1000) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems?limit=${limit}`;
export const createPath = (s: string) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems`;
/** A create's body: no id, so each server gives every new workflowitem a fresh one. */
export const CREATE_BODY = JSON.stringify({ displayName: "Load test step", amountType: "N/A" });
export const itemPath = (s: string, w: string) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems/${w}`;
