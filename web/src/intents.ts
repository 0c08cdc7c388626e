/**
 * What each intent on a project, subproject or workflowitem lets its holder do, as the permissions
 * panel shows it: a name and a sentence, by the intent's verb (the part after the level). The intent
 * ids themselves are the server's (the panel lists what the server answers, plus these).
 */
export type Level = "project" | "subproject" | "workflowitem";

interface Verb {
  readonly name: string;
  readonly explain: (level: Level) => string;
  /** The levels that have this intent (all when absent). */
  readonly levels?: readonly Level[];
}

const LEVELS: ReadonlySet<string> = new Set<Level>(["project", "subproject", "workflowitem"]);

const VERBS: Record<string, Verb> = {
  list: { name: "See in lists", explain: (l) => `The ${l} appears in lists (redacted without "View details").` },
  viewDetails: { name: "View details", explain: (l) => `Read the ${l}'s fields, budgets and documents.` },
  viewHistory: { name: "View history", explain: (l) => `Read every change made to the ${l}, and who made it.` },
  update: { name: "Edit", explain: (l) => `Change the ${l}'s name, description and other fields${l === "workflowitem" ? ", and add or delete documents" : ""}.` },
  assign: { name: "Assign", explain: (l) => `Choose who is responsible for the ${l} (its assignee closes it).` },
  close: { name: "Close", explain: (l) => `Close the ${l} (together with being its assignee).` },
  delete: { name: "Delete", explain: (l) => `Delete the ${l}.` },
  createSubproject: { name: "Create subprojects", explain: () => "Add subprojects to the project.", levels: ["project"] },
  createWorkflowitem: { name: "Create workflowitems", explain: () => "Add workflowitems to the subproject.", levels: ["subproject"] },
  reorderWorkflowitems: { name: "Reorder workflowitems", explain: () => "Change the order of the subproject's workflowitems.", levels: ["subproject"] },
  "budget.updateProjected": { name: "Set projected budgets", explain: (l) => `Add or change the ${l}'s projected budgets.`, levels: ["project", "subproject"] },
  "budget.deleteProjected": { name: "Remove projected budgets", explain: (l) => `Remove a projected budget of the ${l}.`, levels: ["project", "subproject"] },
  "intent.listPermissions": { name: "See permissions", explain: (l) => `See who holds which permission on the ${l}.` },
  "intent.grantPermission": { name: "Grant permissions", explain: (l) => `Give users and groups permissions on the ${l}.` },
  "intent.revokePermission": { name: "Revoke permissions", explain: (l) => `Take permissions on the ${l} away from users and groups.` },
};

/** The intents the panel offers at a level (the server may answer more: those are listed too). */
export function intentsAt(level: Level): string[] {
  return Object.entries(VERBS)
    .filter(([, v]) => !v.levels || v.levels.includes(level))
    .filter(([verb]) => verb !== "delete")
    .map(([verb]) => `${level}.${verb}`);
}

/** An intent's name and explanation; an intent this table does not know is shown by its id. */
export function describeIntent(intent: string): { name: string; explain: string } {
  const dot = intent.indexOf(".");
  const level = intent.slice(0, dot) as Level;
  const v = VERBS[intent.slice(dot + 1)];
  if (!v || !LEVELS.has(level)) return { name: intent, explain: "" };
  return { name: v.name, explain: v.explain(level) };
}
