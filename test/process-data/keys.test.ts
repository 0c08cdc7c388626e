import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ValidationError } from "../../src/errors.js";
import { bucketOf, keys, parseKey, parseKeyspace } from "../../src/process-data/keys.js";
import { compareTuples } from "../../src/kv/tuple.js";

const PID = "0b7e3c2a-1111-4222-8333-444455556666";
const ROOT = "9f00aa00-1111-4222-8333-444455556666";
const UUID = "123e4567-e89b-42d3-a456-426614174000";

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).field;
  }
  throw new Error("expected a ValidationError");
}

describe("process-data key patterns", () => {
  it("parses every pattern of DESIGN.md into its parts", () => {
    expect(parseKey("bpm-form-submissions", `process/${PID}/task/Activity_1x`)).toMatchObject({
      kind: "task",
      processInstanceId: PID,
      taskDefinitionKey: "Activity_1x",
    });
    expect(parseKey("form-submissions", `process-definition/add-lab/start-form/${UUID}`)).toMatchObject({
      keyspace: "bpm-form-submissions",
      kind: "start-form",
      processDefinitionKey: "add-lab",
      uuid: UUID,
    });
    expect(parseKey("bpm-form-submissions", `lowcode_${ROOT}_${PID}_system_signature_ceph_key`)).toMatchObject({
      kind: "signature",
      rootProcessInstanceId: ROOT,
      processInstanceId: PID,
    });
    expect(parseKey("bpm-form-submissions", `lowcode_${PID}_system_signature_ceph_key_12`)).toMatchObject({
      kind: "batch-signature",
      processInstanceId: PID,
      index: 12,
    });
    expect(parseKey("bpm-message-payloads", `process-definition/p.1/start-message/${UUID}`)).toMatchObject({
      kind: "start-message",
      processDefinitionKey: "p.1",
    });
    expect(parseKey("bpm-form-schemas", "add-lab-bp-form")).toMatchObject({ kind: "form-schema", formKey: "add-lab-bp-form" });
    // form keys are case-insensitive (the platform's form-schema provider): one key, lower-cased
    expect(parseKey("bpm-form-schemas", "Add-Lab-BP-Form")).toMatchObject({ key: "add-lab-bp-form", formKey: "add-lab-bp-form" });
    expect(parseKey("form-scripts", "lab.js")).toMatchObject({ kind: "form-script", scriptName: "lab.js" });
  });

  it("builders produce keys that parse back to the same parts", () => {
    expect(parseKey("bpm-form-submissions", keys.task(PID, "t"))).toMatchObject({ processInstanceId: PID, taskDefinitionKey: "t" });
    expect(parseKey("bpm-form-submissions", keys.signature(ROOT, PID))).toMatchObject({ rootProcessInstanceId: ROOT });
    expect(parseKey("bpm-form-submissions", keys.batchSignature(PID, 0))).toMatchObject({ index: 0 });
    expect(parseKey("bpm-message-payloads", keys.startMessage("d", UUID))).toMatchObject({ uuid: UUID });
  });

  it("refuses bad parts with an error naming the part", () => {
    expect(fieldOf(() => parseKey("bpm-form-submissions", "process//task/t"))).toBe("processInstanceId");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/${PID}/task/`))).toBe("taskDefinitionKey");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/a\u0000b/task/t`))).toBe("processInstanceId");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/${PID}/task/t\n`))).toBe("taskDefinitionKey");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/../task/t`))).toBe("processInstanceId");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/a_b/task/t`))).toBe("processInstanceId");
    // An extra segment would address another record in a naive store: refused as a pattern mismatch.
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process/${PID}/task/t/x`))).toBe("key");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process-definition/d/start-form/not-a-uuid`))).toBe("uuid");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `process-definition/d/start-form/${UUID.toUpperCase()}`))).toBe("uuid");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `lowcode_${PID}_system_signature_ceph_key_01`))).toBe("index");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `lowcode_${PID}_system_signature_ceph_key`))).toBe("key");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `lowcode_a_b_c_system_signature_ceph_key`))).toBe("key");
    expect(fieldOf(() => parseKey("bpm-form-submissions", `lowcode_a_b_system_signature_ceph_key_1`))).toBe("processInstanceId");
    expect(fieldOf(() => parseKey("bpm-form-submissions", "something-else"))).toBe("key");
    expect(fieldOf(() => parseKey("bpm-form-schemas", "a/b"))).toBe("formKey");
    expect(fieldOf(() => parseKey("bpm-form-schemas", ""))).toBe("key");
    expect(fieldOf(() => parseKey("bpm-form-scripts", "x\u007f"))).toBe("scriptName");
    expect(fieldOf(() => parseKey("bpm-form-scripts", "\ud800"))).toBe("scriptName");
    expect(fieldOf(() => parseKey("bpm-form-scripts", "x".repeat(256)))).toBe("scriptName");
    expect(fieldOf(() => parseKey("bpm-form-scripts", "я".repeat(128)))).toBe("scriptName");
    expect(parseKey("bpm-form-scripts", "я".repeat(127)).key).toBe("я".repeat(127));
    expect(fieldOf(() => parseKeyspace("bpm-other"))).toBe("keyspace");
    expect(fieldOf(() => keys.batchSignature(PID, -1))).toBe("index");
  });

  it("never lets two different keys parse to one record, and never crashes", () => {
    const part = fc.string({ unit: "binary", maxLength: 12 });
    const keyArb = fc.oneof(
      fc.tuple(part, part).map(([a, b]) => `process/${a}/task/${b}`),
      fc.tuple(part, part).map(([a, b]) => `lowcode_${a}_${b}_system_signature_ceph_key`),
      fc.tuple(part, part).map(([a, b]) => `lowcode_${a}_system_signature_ceph_key_${b}`),
      fc.string({ unit: "binary", maxLength: 40 }),
    );
    fc.assert(
      fc.property(keyArb, keyArb, (a, b) => {
        const pa = tryParse(a);
        const pb = tryParse(b);
        if (pa && pb && a !== b) expect(JSON.stringify(pa)).not.toBe(JSON.stringify(pb));
        // Re-formatting the parts gives back the exact key: the parts name one key only.
        for (const [key, p] of [
          [a, pa],
          [b, pb],
        ] as const) {
          if (!p) continue;
          const again =
            p.kind === "task"
              ? keys.task(p.processInstanceId, p.taskDefinitionKey)
              : p.kind === "signature"
                ? keys.signature(p.rootProcessInstanceId, p.processInstanceId)
                : p.kind === "batch-signature"
                  ? keys.batchSignature(p.processInstanceId, p.index)
                  : p.key;
          expect(again).toBe(key);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("bucket order agrees with key order within a keyspace", () => {
    const id = fc.stringMatching(/^[0-9a-f-]{1,8}$/);
    const keyArb = fc.oneof(
      fc.tuple(id, fc.stringMatching(/^[A-Za-z_]{1,5}$/)).map(([p, t]) => keys.task(p, t)),
      fc.tuple(id, id).map(([r, p]) => keys.signature(r, p)),
      fc.tuple(id, fc.nat(30)).map(([p, i]) => keys.batchSignature(p, i)),
      fc.tuple(fc.stringMatching(/^[a-z-]{1,4}$/), fc.uuid({ version: 4 })).map(([d, u]) => keys.startForm(d, u)),
    );
    fc.assert(
      fc.property(keyArb, keyArb, (a, b) => {
        const ba = bucketOf(parseKey("bpm-form-submissions", a));
        const bb = bucketOf(parseKey("bpm-form-submissions", b));
        expect(a.startsWith(ba)).toBe(true);
        const byBucket = compareTuples([ba], [bb]);
        if (byBucket !== 0) expect(compareTuples([a], [b])).toBe(byBucket);
      }),
      { numRuns: 3000 },
    );
    const name = fc.string({ unit: "grapheme", minLength: 1, maxLength: 4 }).filter((s) => {
      try {
        parseKey("bpm-form-schemas", s);
        return true;
      } catch {
        return false;
      }
    });
    fc.assert(
      fc.property(name, name, (a, b) => {
        // a form key is stored lower-cased: the order that matters is the stored keys'
        const [pa, pb] = [parseKey("bpm-form-schemas", a), parseKey("bpm-form-schemas", b)];
        const byBucket = compareTuples([bucketOf(pa)], [bucketOf(pb)]);
        if (byBucket !== 0) expect(compareTuples([pa.key], [pb.key])).toBe(byBucket);
      }),
      { numRuns: 3000 },
    );
  });
});

function tryParse(key: string) {
  try {
    return parseKey("bpm-form-submissions", key);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return undefined;
  }
}
