/**
 * The guard's name lookups are bounded (webhook-target.ts): in time, and in how many run at once, so
 * names whose nameserver never answers cannot hold libuv's thread pool. The lookup is injected: a
 * nameserver that never answers cannot be set up on loopback (dns.lookup reads the system's resolv.conf).
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.js";
import { WebhookGuard } from "../../src/subscriptions/webhook-target.js";

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
    const refused = await guard.check("http://never.example/hook", "webhook.url").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused).toMatchObject({ field: "webhook.url", message: "webhook.url: its host never.example did not resolve in time" });
  });

  it("runs at most `concurrent` lookups at once: a lookup past its timeout keeps its place until the system answers", async () => {
    const held = heldLookup("slow.example");
    const guard = new WebhookGuard([], undefined, { lookup: held.lookup, timeoutMs: 50, concurrent: 1 });
    await expect(guard.check("http://slow.example/", "webhook.url")).rejects.toThrow("did not resolve in time");
    // The slow lookup still runs: the next name waits for its place and is refused in time, never asked.
    await expect(guard.check("http://fast.example/", "webhook.url")).rejects.toThrow("fast.example did not resolve in time");
    expect(held.asked).toEqual(["slow.example"]);
    held.release();
    await expect(guard.check("http://fast.example/", "webhook.url")).resolves.toBeInstanceOf(URL);
    expect(held.asked).toEqual(["slow.example", "fast.example"]);
  });

  it("names the kind of a refused address, never the address an internal name resolves to (told to the operator's log instead)", async () => {
    const told: string[][] = [];
    const guard = new WebhookGuard([], undefined, {
      lookup: async () => [{ address: "10.3.4.5", family: 4 }],
      onRefused: (host, address) => told.push([host, address]),
    });
    const refused = await guard.check("http://db.internal/", "webhook.url").catch((e: unknown) => e);
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
