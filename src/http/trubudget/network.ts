/**
 * TruBudget's network routes (api/src/network/controller/*.ts, v2.18) answered with the truth of a
 * flowstore server: one node of one organization, with no peers. `network.list` lists that node (its
 * address is the fingerprint of the key that signs its checkpoints, its access "admin"),
 * `network.listActive` counts 0 peers; registering, approving, declining and voting on nodes are refused
 * (409) after their input is checked: there is no network to change.
 */
import { Type, type TSchema } from "@sinclair/typebox";
import { ROOT_ID } from "../../access/actor.js";
import { ConflictError } from "../../errors.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, ok, Reply } from "./envelope.js";

/** The organization of this node when none is configured. */
export const DEFAULT_ORGANIZATION = "flowstore";

/** A user's organization as TruBudget shows it: root's is the node's own. */
export const organizationOf = (u: { id: string; organization?: string }, node: string): string => (u.id === ROOT_ID ? node : (u.organization ?? ""));

const Text = Type.String({ minLength: 1, maxLength: 256 });
const strict = { additionalProperties: false } as const;

/** Each refused route with its body (as TruBudget's schemas have it) and what it would have done. */
const REFUSED: readonly (readonly [string, TSchema, string])[] = [
  ["network.registerNode", Type.Object({ address: Text, organization: Text }, strict), "register a node"],
  ["network.registerNodeManual", Type.Object({ address: Text, organization: Text }, strict), "register a node"],
  ["network.declineNode", Type.Object({ node: Type.Object({ address: Text, organization: Text }) }, strict), "decline a node"],
  ["network.voteForPermission", Type.Object({ address: Text, vote: Text }, strict), "vote on a node's permissions"],
  ["network.approveNewOrganization", Type.Object({ organization: Text }, strict), "approve an organization"],
  ["network.approveNewNodeForExistingOrganization", Type.Object({ address: Text }, strict), "approve a node"],
];

const Node = Type.Object({
  address: Type.Object({ address: Type.String(), organization: Type.String() }),
  myVote: Type.String(),
  currentAccess: Type.Object({
    accessType: Type.String(),
    approvers: Type.Array(Type.Object({ address: Type.String(), organization: Type.String() })),
    decliners: Type.Array(Type.Object({ address: Type.String(), organization: Type.String() })),
  }),
  isConnected: Type.Boolean(),
});

export const networkRoutes: RoutePlugin<{ organization?: string }> = async (app, options) => {
  const organization = options.organization ?? DEFAULT_ORGANIZATION;
  const address = app.flowstore.checkpoints.publicKey.keyFingerprint;

  app.get("/network.list", { schema: { response: { 200: Reply(Type.Object({ nodes: Type.Array(Node) })) } } }, async () =>
    ok({ nodes: [{ address: { address, organization }, myVote: "admin", currentAccess: { accessType: "admin", approvers: [], decliners: [] }, isConnected: true }] }),
  );

  app.get("/network.listActive", { schema: { response: { 200: Reply(Type.Object({ peers: Type.Integer() })) } } }, async () => ok({ peers: 0 }));

  for (const [route, body, what] of REFUSED) {
    app.post(`/${route}`, { schema: { body: Envelope(body) } }, async () => {
      throw new ConflictError(`flowstore is a single node of one organization (${organization}): there is no network in which to ${what}`);
    });
  }
};
