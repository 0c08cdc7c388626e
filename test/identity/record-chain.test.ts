/**
 * The record chains of the identity and global-permission partitions (kv/record-chain.ts), on every
 * backend: every write of a user, a group or a grant is chained and verifies; writers in two processes
 * (two handles on one store) never fork a chain; an edit around the chain (a record changed, removed or
 * added, an event altered) fails verification naming the record; a partition written before its chain
 * is adopted, by its first chained write or at open. Opened as a whole store, each change is anchored in
 * the ledger and the feed (in one commit on memory and LMDB, right after on Redis and PostgreSQL), the
 * transparency log takes it in as a leaf with the event's hash, and a tail cut back fails on the anchor.
 */
import { afterEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { GLOBAL, GLOBAL_KEYS } from "../../src/access/global.js";
import { Identity } from "../../src/identity/identity.js";
import { groupKey, PARTITION, userKey } from "../../src/identity/records.js";
import type { Key, Partition } from "../../src/kv/contract.js";
import { openFlowstore } from "../../src/compose/index.js";
import { asActor, CHAIN, outsideActor, recordEvents } from "../../src/kv/record-chain.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

const user = (id: string) => ({ id, displayName: id, password: `${id} password 1` });
const results = async (identity: Identity) => Object.fromEntries((await identity.verifyRecords()).map(({ partition, result }) => [partition[0], result]));

forEachBackend((backend) => {
  it("chains every write of users, groups and grants, from two processes at once, and verifies", async () => {
    const h = await backend.create();
    handles.push(h);
    const a = new Identity(h.kv);
    const b = new Identity(await h.reopen());
    await Promise.all([...["u1", "u2", "u3"].map((id) => a.createUser(SYSTEM, user(id))), ...["u4", "u5", "u6"].map((id) => b.createUser(SYSTEM, user(id)))]);
    await Promise.all([
      a.createGroup(SYSTEM, { id: "crew", displayName: "Crew", members: ["u1"] }),
      b.global.grant(SYSTEM, "global.createUser", "u4"),
      a.disableUser(SYSTEM, "u5"),
    ]);
    await Promise.all([b.addMember(SYSTEM, "crew", "u2"), a.global.grant(SYSTEM, "global.createGroup", "u6"), b.setPassword(SYSTEM, "u3", "u3 password 2")]);
    // Read back through a handle of its own (an LMDB handle renews its read transaction in a later event turn).
    const reader = new Identity(await h.reopen());
    const r = await results(reader);
    expect(r.identity).toMatchObject({ ok: true });
    expect(r.identity!.checked).toBe(9); // six users, a group, a disable, a membership (a password is no record of the chain)
    expect(r.global).toEqual({ ok: true, checked: 2 });
    expect((await reader.listUsers(SYSTEM)).items.map((u) => u.id).sort()).toEqual(["u1", "u2", "u3", "u4", "u5", "u6"]);
  });

  it("fails a record changed, removed or added around the chain, and an altered event", async () => {
    const h = await backend.create();
    handles.push(h);
    const identity = new Identity(h.kv);
    for (const id of ["ann", "bob"]) await identity.createUser(SYSTEM, user(id));
    await identity.createGroup(SYSTEM, { id: "ops", displayName: "Ops", members: ["ann"] });
    await identity.global.grant(SYSTEM, "global.createGroup", "ops");
    const raw = h.kv; // the store itself: no chain
    const put = (p: Partition, k: Key, v: unknown) => raw.commit(p, [{ type: "put", key: k, value: Buffer.from(JSON.stringify(v)) }]);

    const ann = (await raw.get(PARTITION, userKey("ann")))!.value;
    await put(PARTITION, userKey("ann"), { ...JSON.parse(ann.toString()), groups: ["ops", "admins"] });
    expect((await results(identity)).identity).toMatchObject({ ok: false, firstBad: { reason: "a record differs from its chain", key: JSON.stringify(userKey("ann")) } });
    await raw.commit(PARTITION, [{ type: "put", key: userKey("ann"), value: ann }]);
    expect((await results(identity)).identity).toMatchObject({ ok: true });

    await raw.commit(PARTITION, [{ type: "delete", key: userKey("bob") }]);
    expect((await results(identity)).identity).toMatchObject({ ok: false, firstBad: { reason: "a record the chain holds is missing", key: JSON.stringify(userKey("bob")) } });
    await identity.createUser(SYSTEM, user("bob")); // put back through the chain: a new event

    await put(PARTITION, groupKey("admins"), { id: "admins", displayName: "Admins", members: ["ann"], createdAt: new Date().toISOString() });
    expect((await results(identity)).identity).toMatchObject({ ok: false, firstBad: { reason: "a record the chain does not hold" } });
    await raw.commit(PARTITION, [{ type: "delete", key: groupKey("admins") }]);
    expect((await results(identity)).identity).toMatchObject({ ok: true });

    // The grant's event rewritten to match a forged grant: its hash no longer matches.
    const permissions = JSON.parse((await raw.get(GLOBAL.partition(), GLOBAL_KEYS.permissions))!.value.toString());
    await put(GLOBAL.partition(), GLOBAL_KEYS.permissions, { ...permissions, "global.createUser": ["bob"] });
    expect((await results(identity)).global).toMatchObject({ ok: false, firstBad: { reason: "a record differs from its chain" } });
    const logKey = CHAIN.pack(["log", 1]);
    const event = JSON.parse((await raw.get(GLOBAL.partition(), logKey))!.value.toString());
    event.changes = [[event.changes[0][0], "0".repeat(64)]];
    await put(GLOBAL.partition(), logKey, event);
    expect((await results(identity)).global).toMatchObject({ ok: false, firstBad: { seq: 1, reason: "hash does not match the event's content" } });
  });

  it("adopts the records of a partition written before its chain", async () => {
    const h = await backend.create();
    handles.push(h);
    // A store from before the chains: records put as they were then.
    const stamp = new Date().toISOString();
    await h.kv.commit(PARTITION, [
      { type: "put", key: userKey("old"), value: Buffer.from(JSON.stringify({ id: "old", displayName: "old", enabled: true, groups: [], createdAt: stamp })) },
      { type: "put", key: userKey("older"), value: Buffer.from(JSON.stringify({ id: "older", displayName: "older", enabled: true, groups: [], createdAt: stamp })) },
    ]);
    await h.kv.commit(GLOBAL.partition(), [{ type: "put", key: GLOBAL_KEYS.permissions, value: Buffer.from(JSON.stringify({ "global.createUser": ["old"] })) }]);
    const identity = new Identity(h.kv);
    expect((await results(identity)).identity).toMatchObject({ ok: false, firstBad: { reason: "a record the chain does not hold" } });
    // The first chained write adopts what is there; adoptRecords adopts the rest and then does nothing.
    await identity.createUser(SYSTEM, user("new"));
    await identity.adoptRecords();
    await identity.adoptRecords();
    const r = await results(identity);
    expect(r.identity).toEqual({ ok: true, checked: 1 });
    expect(r.global).toEqual({ ok: true, checked: 1 });
  });

  it("anchors each change in the ledger and the feed, where the transparency log takes it in, and verifies the anchor", async () => {
    const h = await backend.create();
    handles.push(h);
    const fs = await openFlowstore(h.kv);
    try {
      await fs.identity.createUser(SYSTEM, user("ann"));
      await fs.identity.createUser(SYSTEM, user("bob"));
      await fs.global.grant(SYSTEM, "global.createGroup", "ann");
      for (const p of [PARTITION, GLOBAL.partition()]) {
        const head = JSON.parse((await h.kv.get(p, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number; hash: string };
        expect(await fs.resources.writer.readLedger(p)).toEqual(head);
        await fs.log.tree.appendPending();
        const [event] = await recordEvents(h.kv, p, head.seq, head.seq);
        const index = await fs.log.tree.indexOf(p, head.seq);
        expect(index).not.toBeNull();
        expect((await fs.log.tree.leaf(index!)).hash).toBe(event!.hash);
      }
      // The identity and global-permission chains, and the register of erasures (its chain started empty at open).
      expect((await fs.verifyAll()).records).toMatchObject({ ok: true, partitions: 3 });
      // The chain's tail cut back (its last event and the head moved back): the ledger's anchor names it.
      const head = JSON.parse((await h.kv.get(PARTITION, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number };
      const [before] = await recordEvents(h.kv, PARTITION, head.seq - 1, head.seq - 1);
      await h.kv.commit(PARTITION, [
        { type: "delete", key: CHAIN.pack(["log", head.seq]) },
        { type: "delete", key: userKey("bob") },
        { type: "put", key: CHAIN.pack(["head"]), value: Buffer.from(JSON.stringify({ seq: before!.seq, hash: before!.hash })) },
      ]);
      const [identity] = await fs.identity.verifyRecords(h.kv, (p) => fs.resources.writer.readLedger(p));
      expect(identity!.result).toMatchObject({ ok: false, firstBad: { reason: expect.stringMatching(/the ledger anchors seq \d+, the chain ends at \d+: its tail was cut/) } });
    } finally {
      await fs.close();
    }
  });
});

it("work started outside an actor's scope from inside one (a timer, a background pass) commits as the system, not as that actor", async () => {
  const kv = new MemoryKv();
  const identity = new Identity(kv);
  const alice = { id: "alice" };
  /** The actor the last record event names, after a bare chained commit made by a timer started in alice's scope (through `start`). */
  const actorOfTimerCommit = async (start: (fn: () => void) => void, id: string): Promise<string | undefined> => {
    await asActor(
      alice,
      () =>
        new Promise<void>((resolve, reject) =>
          start(() => void identity.kv.commit(PARTITION, [{ type: "put", key: userKey(id), value: Buffer.from("{}") }]).then(() => resolve(), reject)),
        ),
    );
    const head = JSON.parse((await kv.get(PARTITION, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number };
    const [last] = await recordEvents(kv, PARTITION, head.seq, head.seq);
    return last!.actor;
  };
  // A timer started in the scope carries it (AsyncLocalStorage flows into it): its commit names alice.
  expect(await actorOfTimerCommit((fn) => setTimeout(fn, 0), "ann")).toBe("alice");
  // Started through outsideActor (as Background.start and the feed's watcher start theirs): the system.
  expect(await actorOfTimerCommit((fn) => outsideActor(() => setTimeout(fn, 0)), "bob")).toBe("system");
});

it("an actor's scope names its commits while it runs, beside another scope ending; what one left behind names its actor or the system, never another", async () => {
  const kv = new MemoryKv();
  const identity = new Identity(kv);
  const lastActor = async (): Promise<string | undefined> => {
    const head = JSON.parse((await kv.get(PARTITION, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number };
    return (await recordEvents(kv, PARTITION, head.seq, head.seq))[0]!.actor;
  };
  const put = (id: string) => identity.kv.commit(PARTITION, [{ type: "put", key: userKey(id), value: Buffer.from("{}") }]);
  // bob's scope runs on after alice's ended: its commit still names bob
  let endAlice = () => {};
  let bobMayCommit = () => {};
  const alice = asActor({ id: "alice" }, () => new Promise<void>((resolve) => (endAlice = resolve)));
  const bob = asActor({ id: "bob" }, async () => {
    await new Promise<void>((resolve) => (bobMayCommit = resolve));
    await put("b1");
  });
  endAlice();
  await alice;
  bobMayCommit();
  await bob;
  expect(await lastActor()).toBe("bob");
  // A timer carol's scope started and did not wait for fires after every scope ended: it names carol or
  // the system, never another actor (Node 20 and 22 read no actor once the store is off; Node 24's
  // AsyncLocalStorage keeps the one the timer was made in), and no scope's commit names it.
  let fired!: Promise<unknown>;
  await asActor({ id: "carol" }, async () => {
    fired = new Promise((resolve, reject) => setTimeout(() => put("c1").then(resolve, reject), 0));
  });
  await fired;
  expect(["carol", "system"]).toContain(await lastActor());
  // and a scope after that names its actor again
  await asActor({ id: "dave" }, () => put("d1"));
  expect(await lastActor()).toBe("dave");
});
