/**
 * A child process for test/kv/lmdb.test.ts: opens the LMDB store in argv[2] and commits argv[3] puts
 * into partition ["shared"] (keys ["child", i]), one commit each, concurrently, then one absent-check
 * create of ["race"]; prints a JSON line with the versions it got.
 */
import { ConflictError } from "../../src/errors.js";
import { LmdbKv } from "../../src/kv/lmdb.js";

const [dir, count] = [process.argv[2]!, Number(process.argv[3])];
const kv = LmdbKv.open(dir);
// tell the parent the store is open, then wait until it says go, so both processes write at once
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
const versions = await Promise.all(
  Array.from({ length: count }, (_, i) => kv.commit(["shared"], [{ type: "put", key: ["child", i], value: Buffer.from(`c${i}`) }]).then((r) => r.version)),
);
let race: string;
try {
  await kv.commit(
    ["shared"],
    [
      { type: "check", key: ["race"], version: null },
      { type: "put", key: ["race"], value: Buffer.from("child") },
    ],
  );
  race = "won";
} catch (e) {
  race = e instanceof ConflictError ? "conflict" : `error: ${(e as Error).message}`;
}
await kv.close();
process.stdout.write(JSON.stringify({ versions, race }) + "\n");
