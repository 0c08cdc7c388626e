/**
 * The process-wide cache of `allowedIntents` tails (resources/core/core.ts IntentTails): the tail is the
 * same as computed afresh, and what it holds stays within its byte budget however many distinct access
 * entries it is asked about (permission maps of ever new lengths).
 */
import { describe, expect, it } from "vitest";
import { allowedIntents, allowedIntentsTail, encodeAccess, IntentTails } from "../../src/resources/core/core.js";
import { workflowSchema } from "../../src/workflow/schema.js";

const project = workflowSchema.types.get("project")!;
const alice = { id: "alice", groups: [] as string[], system: false };

describe("IntentTails", () => {
  it("answers the tail computed afresh, for each access entry", () => {
    const tails = new IntentTails();
    for (const holders of [["alice"], ["bob"], ["alice", "bob"]]) {
      const permissions = { "project.viewSummary": holders, "project.viewDetails": ["alice"] };
      const raw = encodeAccess({ permissions });
      const expected = allowedIntentsTail(allowedIntents(project, permissions, alice));
      expect(tails.tail(project, raw, alice).equals(expected)).toBe(true);
      expect(tails.tail(project, Buffer.from(raw), alice).equals(expected)).toBe(true);
    }
  });

  it("answers a list's tails (`tails`) as `tail` answers each, siblings sharing an entry or not, a missing entry included", () => {
    const tails = new IntentTails();
    const a = encodeAccess({ permissions: { "project.viewSummary": ["alice"], "project.viewDetails": ["alice"] } });
    const b = encodeAccess({ permissions: { "project.viewSummary": ["alice"] } });
    const raws = [a, Buffer.from(a), b, undefined, undefined, a, b, Buffer.from(b)];
    const fresh = new IntentTails();
    expect(tails.tails(project, raws, alice).map(String)).toEqual(raws.map((raw) => String(fresh.tail(project, raw, alice))));
  });

  it("holds no more than its byte budget, however many distinct entries it is asked about", () => {
    const tails = new IntentTails();
    const filler = "x".repeat(4096);
    let most = 0;
    for (let i = 0; i < 6000; i++) {
      // Every entry a new length and new bytes: without the budget each would be kept (8 per length).
      const raw = encodeAccess({ permissions: { "project.viewSummary": [`u${i}`, filler.slice(0, i)] } });
      tails.tail(project, raw, alice);
      most = Math.max(most, tails.bytes);
    }
    expect(most).toBeGreaterThan(IntentTails.BUDGET / 2);
    expect(most).toBeLessThanOrEqual(IntentTails.BUDGET);
  });

  it("is not emptied by a hit near its budget, and keeps no entry larger than the whole budget", async () => {
    const tails = new IntentTails();
    const filler = "y".repeat(4096);
    const first = encodeAccess({ permissions: { "project.viewSummary": ["first", filler] } });
    tails.tail(project, first, alice);
    // Fill to just under the budget with other entries, then ask about the first again: a hit.
    for (let i = 0; tails.bytes + 2 * (first.length + 64) < IntentTails.BUDGET; i++)
      tails.tail(project, encodeAccess({ permissions: { "project.viewSummary": [`v${i}`, "y".repeat(1000 + i)] } }), alice); // each a new length
    const held = tails.bytes;
    tails.tail(project, Buffer.from(first), alice);
    expect(tails.bytes).toBe(held);
    // One entry larger than the whole budget is answered, not kept.
    const huge = encodeAccess({ permissions: { "project.viewSummary": ["h", "z".repeat(IntentTails.BUDGET)] } });
    const expected = allowedIntentsTail(allowedIntents(project, { "project.viewSummary": ["h", "z".repeat(IntentTails.BUDGET)] }, alice));
    expect(tails.tail(project, huge, alice).equals(expected)).toBe(true);
    expect(tails.bytes).toBe(0);
  });
});
