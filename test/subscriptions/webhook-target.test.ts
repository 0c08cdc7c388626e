/**
 * The guard's name lookups are bounded (webhook-target.ts): in time, and in how many run at once, so
 * names whose nameserver never answers cannot hold libuv's thread pool; and the places are shared fairly
 * between owners, so one owner's slow names delay that owner alone. The lookup is injected (the guard
 * takes it as an option): a nameserver that never answers cannot be set up on loopback (dns.lookup reads
 * the system's resolv.conf).
 */
import { describe, expect, it } from "vitest";
import { UnavailableError, ValidationError } from "../../src/errors.js";
import { LookupBusy, WebhookGuard } from "../../src/subscriptions/webhook-target.js";

/** A lookup whose answers for `held` wait until released; other names answer a public address at once. */
function heldLookup(held: string) {
  let release = () => {};
  const waiting = new Promise<void>((r) => (release = r));
  const asked: string[] = [];
  const lookup = async (host: string) => {
    asked.push(host);
    if (host === held) await waiting;
    return [{ address: "93.184.216.34", family: 4 }];
  };
  return { lookup, asked, release: () => release() };
}

describe("the webhook guard's name lookups", () => {
  it("refuses a name that does not resolve in time with a ValidationError naming the field", async () => {
    const guard = new WebhookGuard([], undefined, { lookup: () => new Promise(() => {}), timeoutMs: 50 });
    const refused = await guard.check("http://never.example/hook", "webhook.url", "alice").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused).toMatchObject({ field: "webhook.url", message: "webhook.url: its host never.example did not resolve in time" });
  });

  it("runs at most `concurrent` lookups at once: a lookup past its timeout keeps its place until the system answers", async () => {
    const held = heldLookup("slow.example");
    const guard = new WebhookGuard([], undefined, { lookup: held.lookup, timeoutMs: 50, concurrent: 1 });
    await expect(guard.check("http://slow.example/", "webhook.url", "alice")).rejects.toThrow("did not resolve in time");
    // The slow lookup still runs: the next name waits for its place and is refused as busy, never asked
    // (a 503 to try again, not a 400: nothing is known of the name).
    const busy = await guard.check("http://fast.example/", "webhook.url", "bob").catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(UnavailableError);
    expect(busy).toMatchObject({ field: "webhook.url", message: expect.stringContaining("the lookup of fast.example found no free place in time") });
    expect(held.asked).toEqual(["slow.example"]);
    held.release();
    await expect(guard.check("http://fast.example/", "webhook.url", "bob")).resolves.toBeInstanceOf(URL);
    expect(held.asked).toEqual(["slow.example", "fast.example"]);
  });

  it("gives one owner one place at most: its names that never answer leave the other place to the other owners", async () => {
    const held = heldLookup("slow.example");
    // The timeout is long: a lookup of bob's that had to wait for a place would be refused, not answered.
    const guard = new WebhookGuard([], undefined, { lookup: held.lookup, timeoutMs: 1000, concurrent: 2 });
    const alices = [1, 2, 3].map(() => guard.resolve("slow.example", "alice").catch((e: unknown) => e));
    // Alice's first lookup holds her place; her others wait for it (not for the other place, which bob and carol take).
    expect(await guard.resolve("fast.example", "bob")).toEqual([{ address: "93.184.216.34", family: 4 }]);
    expect(await guard.resolve("other.example", "carol")).toEqual([{ address: "93.184.216.34", family: 4 }]);
    expect(held.asked).toEqual(["slow.example", "fast.example", "other.example"]);
    // Alice's first lookup timed out (the name's fault); the two that waited for her place are refused as busy (not the name's).
    const [first, ...refused] = await Promise.all(alices);
    expect(first).toMatchObject({ message: "slow.example did not resolve in time" });
    expect(first).not.toBeInstanceOf(LookupBusy);
    for (const w of refused) expect(w).toBeInstanceOf(LookupBusy);
    held.release();
  });

  it("refuses at once a lookup of an owner whose place is held by a lookup past its time", async () => {
    const held = heldLookup("slow.example");
    const guard = new WebhookGuard([], undefined, { lookup: held.lookup, timeoutMs: 50, concurrent: 2 });
    let firstSettled = false;
    const first = guard.resolve("slow.example", "alice").catch((e: unknown) => {
      firstSettled = true;
      return e;
    });
    await first;
    expect(firstSettled).toBe(true);
    const refused = await Promise.all([2, 3, 4].map((n) => guard.resolve(`a${n}.example`, "alice").catch((e: unknown) => e)));
    // Refused on the spot (the refusal names the owner's own lookups), not after waiting out the timeout
    // for a place ("found no free place in time"); her refused names were never asked.
    for (const r of refused) expect(r).toMatchObject({ message: expect.stringContaining("waits for the owner's own lookups") });
    for (const r of refused) expect(r).toBeInstanceOf(LookupBusy);
    expect(held.asked).toEqual(["slow.example"]);
    // Another owner is not touched by it.
    expect(await guard.resolve("fast.example", "bob")).toEqual([{ address: "93.184.216.34", family: 4 }]);
    held.release();
  });

  it("lets an owner whose names answer run its lookups one after another, none refused", async () => {
    const asked: string[] = [];
    const lookup = async (host: string) => {
      asked.push(host);
      await new Promise((r) => setTimeout(r, 20));
      return [{ address: "93.184.216.34", family: 4 }];
    };
    const guard = new WebhookGuard([], undefined, { lookup, timeoutMs: 5_000, concurrent: 2 });
    const answers = await Promise.all([1, 2, 3, 4].map((n) => guard.resolve(`a${n}.example`, "alice")));
    for (const a of answers) expect(a).toEqual([{ address: "93.184.216.34", family: 4 }]);
    expect(asked).toEqual(["a1.example", "a2.example", "a3.example", "a4.example"]);
  });

  it("hands a free place to the owners waiting in turn, not in arrival order", async () => {
    const held = heldLookup("slow.example");
    // Two places an owner's, one place in all, held by carol's slow name: alice's and bob's lookups wait for it.
    const guard = new WebhookGuard([], undefined, { lookup: held.lookup, timeoutMs: 10_000, concurrent: 1, perOwner: 2 });
    const all = [
      guard.resolve("slow.example", "carol"),
      guard.resolve("a1.example", "alice"),
      guard.resolve("a2.example", "alice"),
      guard.resolve("b1.example", "bob"),
      guard.resolve("b2.example", "bob"),
    ];
    all.push(guard.resolve("a3.example", "alice"));
    expect(held.asked).toEqual(["slow.example"]);
    held.release();
    await Promise.all(all);
    // First come, first served would have asked all of alice's names before bob's.
    expect(held.asked).toEqual(["slow.example", "a1.example", "b1.example", "a2.example", "b2.example", "a3.example"]);
  });

  it("names the kind of a refused address, never the address an internal name resolves to (told to the operator's log instead)", async () => {
    const told: string[][] = [];
    const guard = new WebhookGuard([], undefined, {
      lookup: async () => [{ address: "10.3.4.5", family: 4 }],
      onRefused: (host, address) => told.push([host, address]),
    });
    const refused = await guard.check("http://db.internal/", "webhook.url", "alice").catch((e: unknown) => e);
    expect(refused).toMatchObject({ field: "webhook.url", message: "webhook.url: db.internal resolves to a private address (not in FLOWSTORE_WEBHOOK_ALLOW)" });
    expect(told).toEqual([["db.internal", "10.3.4.5"]]);
  });

  it("refuses the IPv6 ranges that embed an IPv4 address: IPv4-compatible, NAT64, 6to4", () => {
    const guard = new WebhookGuard();
    expect(guard.refusal("x", "::7f00:1")).toContain("IPv4-compatible");
    expect(guard.refusal("x", "64:ff9b::a9fe:a9fe")).toContain("NAT64");
    expect(guard.refusal("x", "64:ff9b:1::a00:1")).toContain("NAT64 (local-use)");
    expect(guard.refusal("x", "2002:a00:1::1")).toContain("6to4");
    // A global unicast address outside them is taken.
    expect(guard.refusal("x", "2606:4700::1111")).toBeNull();
  });
});
