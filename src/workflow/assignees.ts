/**
 * The workflow's rules about a user as an assignee: what is assigned to it, and disabling it while
 * something still is. Identity alone knows users, resources alone knows assignments (its index of them,
 * resources/assignments.ts); the rules joining them are the workflow's (TruBudget refuses to disable a
 * user who is still assigned to a project, subproject or workflowitem).
 *
 * Rules:
 * - what is assigned to a user may be read by the user itself or a holder of `global.listAssignments`;
 *   the user must exist; a resource the caller may not view is listed without its display name;
 * - disabling a user needs `global.disableUser` (identity's own rule, checked first) and is refused with a
 *   ConflictError naming what is still assigned to it (at most 20 named) unless `force`.
 */
import type { Actor } from "../access/actor.js";
import { ConflictError } from "../errors.js";
import { DISABLE_USER, LIST_ASSIGNMENTS, type Identity, type UserRecord } from "../identity/index.js";
import type { Assignment, ResourceStore } from "../resources/store.js";
import type { WorkflowSchema } from "./schema.js";

/** The assignments of the disable refusal named in its message; the rest are counted. */
const NAMED_ASSIGNMENTS = 20;

export class Assignees {
  constructor(
    private readonly resources: ResourceStore<WorkflowSchema>,
    private readonly identity: Identity,
  ) {}

  /** What is assigned to a user now: asked by the user itself or a holder of `global.listAssignments`. */
  async assignmentsOf(actor: Actor, id: string): Promise<Assignment[]> {
    await this.identity.getUser(id);
    if (!actor.system && actor.id !== id) await this.identity.global.assert(actor, LIST_ASSIGNMENTS);
    // The display name of a resource the caller may not view is left out (issue 29, finding 12).
    const assigned = await this.resources.assignmentsOf(id);
    return Promise.all(
      assigned.map(async (a) => {
        if (a.displayName === undefined || (await this.resources.reads.canView(actor, { type: a.type, ids: a.ids }))) return a;
        const { displayName: _, ...rest } = a;
        return rest;
      }),
    );
  }

  /**
   * Disables a user (identity's rule: `global.disableUser`), refused with a ConflictError naming what is
   * still assigned to it (projects, subprojects, workflowitems) unless `force`.
   */
  async disableUser(actor: Actor, id: string, options: { force?: boolean } = {}): Promise<UserRecord> {
    await this.identity.global.assert(actor, DISABLE_USER);
    if (options.force !== true) {
      const assigned = await this.resources.assignmentsOf(id);
      if (assigned.length > 0) {
        const named = assigned
          .slice(0, NAMED_ASSIGNMENTS)
          .map((a) => `${a.type} ${a.ids.join("/")}`)
          .join(", ");
        const more = assigned.length > NAMED_ASSIGNMENTS ? ", …" : "";
        throw new ConflictError(`${id} is still assigned to ${assigned.length} resource(s): ${named}${more}; reassign them or disable with force`, "assignments");
      }
    }
    return this.identity.disableUser(actor, id);
  }
}
