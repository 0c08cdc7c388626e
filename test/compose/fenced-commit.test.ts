/**
 * The composed store keeps the backend's one commit per write (`KvStore.commitAcross`, issue 25) under the
 * restore fence (issue 29): the fence forwards it, refuses it while shut, and lets it through once open.
 */
import { afterEach, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { SYSTEM } from "../../src/access/actor.js";
import { UnavailableError } from "../../src/errors.js";
import { StoreFence } from "../../src/compose/fence.js";

let flowstore: Flowstore | undefined;
afterEach(async () => flowstore?.close());

it("the resource writer commits across partitions through the fence, which refuses it while shut", async () => {
  const kv = new MemoryKv();
  let across = 0;
  const counting = new Proxy(kv, {
    get(target, name, receiver) {
      if (name === "commitAcross") {
        return (build: Parameters<NonNullable<MemoryKv["commitAcross"]>>[0]) => {
          across++;
          return target.commitAcross!(build);
        };
      }
      const value = Reflect.get(target, name, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  flowstore = await openFlowstore(counting, {});
  await flowstore.workflow.createProject(SYSTEM, { id: "p", displayName: "P" });
  expect(across).toBeGreaterThan(0);
  const fence = new StoreFence(kv, [], () => Date.now());
  await fence.shut("test", "a restore");
  await expect(flowstore.workflow.createProject(SYSTEM, { id: "q", displayName: "Q" })).rejects.toBeInstanceOf(UnavailableError);
  await fence.open();
  expect(await flowstore.workflow.store.exists({ type: "project", ids: ["p"] })).toBe(true);
});
