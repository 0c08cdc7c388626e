/**
 * A stored record's header (resources/model/record.ts) answers who may list and who may view it without
 * its JSON being parsed, and a list page is joined from the records' public bytes and their
 * allowedIntents tails (model/page-json.ts) as each item with its tail put in would be joined, whether
 * from the items themselves (`pageJson`) or from their copies in place (`PageItems`), in any order.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeRecord, RecordView, type Envelope } from "../../src/resources/model/record.js";
import { PageItems, pageJson } from "../../src/resources/model/page-json.js";
import { allowedIntentsTail, withAllowedIntents } from "../../src/resources/core/core.js";

const envelope = (id: string, text: string): Envelope => ({
  id,
  type: "workflowitem",
  data: { displayName: text },
  meta: { createdAt: "2026-11-28T00:00:00.000Z", createdBy: "mary", updatedAt: "2026-11-28T00:00:00.000Z", version: 1 } as Envelope["meta"],
});
const actor = (id: string, ...groups: string[]) => ({ id, groups, system: false });

describe("RecordView holders", () => {
  it("finds an identity in its own part of the header only, whole names only", () => {
    // the JSON names mary and the listers name tom: neither counts as a viewer
    const view = new RecordView(encodeRecord(envelope("w1", "for mary, tom and managers"), "open", ["tom", "mary"], ["jane", "managers"]));
    expect(view.viewableBy(actor("jane"))).toBe(true);
    expect(view.viewableBy(actor("mary", "managers"))).toBe(true);
    expect(view.viewableBy(actor("mary"))).toBe(false);
    expect(view.viewableBy(actor("tom"))).toBe(false);
    expect(view.viewableBy(actor("jan"))).toBe(false);
    expect(view.viewableBy(actor("anager"))).toBe(false);
    expect(view.visibleTo(actor("tom"))).toBe(true);
    expect(view.visibleTo(actor("mary"))).toBe(true);
    expect(view.visibleTo(actor("jane"))).toBe(false);
    expect(view.visibleTo(actor("ma"))).toBe(false);
    expect(view.viewableBy({ id: "root", groups: [], system: true })).toBe(true);
  });

  it("answers as the identities it was written with, for parts short and long (searched in JavaScript, or by lastIndexOf past SHORT_PART)", () => {
    // names that are prefixes, suffixes and parts of one another, and of the JSON's text
    const name = fc.constantFrom("a", "ab", "b", "ba", "mary", "ary", "managers", "é", "日本", "x".repeat(40));
    fc.assert(
      fc.property(
        fc.array(name, { maxLength: 12 }),
        fc.array(name, { maxLength: 12 }),
        fc.nat(20),
        name,
        fc.array(name, { maxLength: 3 }),
        (listers, viewers, padding, id, groups) => {
          // padding: identities no actor here is, so that a part passes 256 bytes
          const pad = Array.from({ length: padding }, (_, i) => `padding-identity-${i}`);
          const view = new RecordView(encodeRecord(envelope("w", `${id} ${groups.join(" ")}`), "open", [...pad, ...listers], [...viewers, ...pad]));
          const who = actor(id, ...groups);
          const holds = (ids: string[]) => [id, ...groups].some((x) => ids.includes(x));
          expect(view.visibleTo(who)).toBe(holds(listers));
          expect(view.viewableBy(who)).toBe(holds(viewers));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("refuses a record cut anywhere in its header, and reads one cut in its JSON as far as its header goes", () => {
    const bytes = encodeRecord(envelope("w3", "text"), "open", ["tom", "mary"], ["jane", "managers"]);
    const whole = new RecordView(bytes);
    const publicStart = bytes.length - whole.publicBytes().length;
    for (let cut = 0; cut < bytes.length; cut++) {
      if (cut < publicStart) expect(() => new RecordView(bytes.subarray(0, cut)), `cut at ${cut}`).toThrow();
      else expect(new RecordView(bytes.subarray(0, cut)).viewableBy(actor("jane"))).toBe(true);
    }
    expect(whole.version).toBe(1);
    expect(whole.createdAtMs).toBe(Date.parse("2026-11-28T00:00:00.000Z"));
    expect(whole.status).toBe("open");
    // lengths of 2 and 4 bytes read big-endian, high bits included
    const big = encodeRecord({ ...envelope("w".repeat(300), "x"), meta: { ...envelope("w", "x").meta, version: 0xfffffffe } }, "s".repeat(40_000), ["a"], ["b"]);
    const view = new RecordView(big);
    expect(view.version).toBe(0xfffffffe);
    expect(view.id).toBe("w".repeat(300));
    expect(view.status).toBe("s".repeat(40_000));
    expect(view.envelope().id).toBe("w".repeat(300));
  });

  it("refuses everyone but the system on empty parts", () => {
    const view = new RecordView(encodeRecord(envelope("w2", "x"), "open", [], []));
    expect(view.viewableBy(actor("mary"))).toBe(false);
    expect(view.visibleTo(actor("mary"))).toBe(false);
    expect(view.id).toBe("w2");
    expect(view.id).toBe("w2");
  });
});

describe("pageJson", () => {
  it("joins items and their tails as each item with its tail put in would be joined", () => {
    const items = [
      Buffer.from(JSON.stringify(envelope("a", "one"))),
      Buffer.from('{"id":"b","redacted":true} '), // a closing brace that is not the last byte
      Buffer.from(JSON.stringify(envelope("c", "ünïcödé"))).subarray(0), // a view
    ];
    const tails = [allowedIntentsTail(["x.view"]), allowedIntentsTail([]), allowedIntentsTail(["x.view", "x.update"])];
    for (const cursor of [null, "abc"]) {
      const expected = pageJson(
        items.map((item, i) => withAllowedIntents(item, tails[i]!)),
        cursor,
      );
      expect(pageJson(items, cursor, tails).toString()).toBe(expected.toString());
      expect(JSON.parse(pageJson(items, cursor, tails).toString()).items[2].allowedIntents).toEqual(["x.view", "x.update"]);
    }
    expect(pageJson([], null, []).toString()).toBe('{"items":[],"nextCursor":null}');
    expect(pageJson(items, null).toString()).toBe(`{"items":[${items.map(String).join(",")}],"nextCursor":null}`);
  });
});

describe("PageItems", () => {
  it("joins items copied in once, in any order, as pageJson joins them (runs across its buffers included)", () => {
    const item = fc.oneof(
      fc.json().map((j) => Buffer.from(j)),
      fc.record({ id: fc.string(), n: fc.integer() }).map((o) => Buffer.from(JSON.stringify(o))),
      fc.constant(Buffer.from('{"id":"b","redacted":true} ')), // a closing brace that is not the last byte
    );
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 200 }),
        fc.option(fc.string(), { nil: null }),
        fc.array(fc.nat()),
        (items, withTails, firstChunk, cursor, swaps) => {
          const tails = withTails ? items.map((_, i) => allowedIntentsTail(i % 3 ? ["x.view"] : [])) : null;
          const placed = new PageItems(firstChunk);
          items.forEach((it, i) => expect(placed.add(it.subarray(0), tails?.[i])).toBe(i));
          expect(placed.length).toBe(items.length);
          // an order of runs and single items: the identity, with some places swapped
          const order = items.map((_, i) => i);
          for (const s of swaps) {
            if (order.length < 2) break;
            const a = s % order.length;
            const b = (a + 1 + (s >> 3)) % order.length;
            [order[a], order[b]] = [order[b]!, order[a]!];
          }
          const expected = pageJson(
            order.map((i) => items[i]!),
            cursor,
            tails && order.map((i) => tails[i]!),
          );
          expect(placed.page(order, cursor).toString("latin1")).toBe(expected.toString("latin1"));
          items.forEach((it, i) => expect(placed.item(i).toString("latin1")).toBe((tails ? withAllowedIntents(it, tails[i]!) : it).toString("latin1")));
        },
      ),
      { numRuns: 500 },
    );
  });
});
