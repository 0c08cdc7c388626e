/**
 * The http workload's load driver, in its own process (forked by processes.ts `drive`): keep-alive
 * node:http connections to one 127.0.0.1 server, for a bounded time, and latencies per operation.
 *
 * - Closed loop (no `rate`): `connections` workers, each sending its next request when the last one is
 *   answered; each request's operation is drawn by weight (seeded, so runs against two servers draw alike).
 * - Open loop (`rate`): one request every 1/rate s, at most `connections` in flight (a writer at a fixed
 *   pace); when all are in flight, the next starts when one is answered and the slots missed meanwhile
 *   are dropped (`late` counts the waits; `pace` is the rate reached).
 *
 * An operation picks its path (and body) at random from its lists; `{n}` in a body becomes a counter
 * (every update writes a new value). A `page` operation walks its collection: ?limit= drawn in
 * [min, max], then the answer's nextCursor, from the first page again after the last. Every answer must
 * be 2xx: the first that is not ends the run with an error naming it. A request unanswered after 10 s
 * counts as a timeout (reported).
 *
 * Parent → {spec: DriverSpec}; child → {started} at once, then {result: DriverResult} or {error}; then it exits.
 */
import { Agent, request } from "node:http";
import { prng } from "../../src/workflow/demo.js";

export interface DriverOp {
  readonly name: string;
  readonly weight: number;
  readonly method: "GET" | "POST" | "PATCH" | "PUT";
  readonly paths: readonly string[];
  readonly bodies?: readonly string[];
  readonly page?: { readonly min: number; readonly max: number };
}

export interface DriverSpec {
  /** http://127.0.0.1:port */
  readonly base: string;
  readonly token: string;
  readonly seconds: number;
  readonly connections: number;
  /** Requests per second (open loop); closed loop without it. */
  readonly rate?: number;
  readonly ops: readonly DriverOp[];
  readonly seed?: number;
}

export interface OpResult {
  readonly name: string;
  readonly total: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly timeouts: number;
}

export interface DriverResult {
  readonly seconds: number;
  readonly total: number;
  readonly rps: number;
  readonly ops: OpResult[];
  /** Open loop: requests that started later than due because `connections` were in flight. */
  readonly late: number;
  /** Requests started per second of the run's duration (open loop: the pace reached). */
  readonly pace: number;
}

const TIMEOUT_MS = 10_000;

class Timeout extends Error {}

export async function run(spec: DriverSpec): Promise<DriverResult> {
  const url = new URL(spec.base);
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections });
  const rnd = prng(spec.seed ?? 18);
  const totalWeight = spec.ops.reduce((s, o) => s + o.weight, 0);
  const latencies = spec.ops.map(() => [] as number[]);
  const timeouts = spec.ops.map(() => 0);
  let counter = 0;
  let failure: Error | undefined;

  const send = (method: string, path: string, body: string | undefined) =>
    new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const headers: Record<string, string> = { authorization: `Bearer ${spec.token}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      const req = request({ host: url.hostname, port: url.port, path, method, agent, headers, timeout: TIMEOUT_MS }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Timeout()));
      req.on("error", reject);
      req.end(body);
    });

  const pick = () => {
    let x = rnd() * totalWeight;
    for (let i = 0; i < spec.ops.length; i++) if ((x -= spec.ops[i]!.weight) < 0) return i;
    return spec.ops.length - 1;
  };
  const oneOf = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

  /** One request of operation i; `cursors` is the caller's page state (per worker). */
  const one = async (i: number, cursors: Map<number, string>): Promise<void> => {
    const op = spec.ops[i]!;
    let path = oneOf(op.paths);
    if (op.page) {
      const limit = op.page.min + Math.floor(rnd() * (op.page.max - op.page.min + 1));
      const cursor = cursors.get(i);
      path += `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    }
    const body = op.bodies ? oneOf(op.bodies).replaceAll("{n}", String(counter++)) : undefined;
    const t0 = performance.now();
    let answer: { status: number; body: Buffer };
    try {
      answer = await send(op.method, path, body);
    } catch (e) {
      if (e instanceof Timeout) {
        timeouts[i]!++;
        return;
      }
      throw e;
    }
    latencies[i]!.push(performance.now() - t0);
    if (answer.status < 200 || answer.status > 299) throw new Error(`${op.name}: ${op.method} ${path} answered ${answer.status}: ${answer.body.toString("utf8").slice(0, 300)}`);
    if (op.page) {
      const next = (JSON.parse(answer.body.toString("utf8")) as { nextCursor: string | null }).nextCursor;
      if (next) cursors.set(i, next);
      else cursors.delete(i);
    }
  };

  const t0 = performance.now();
  const end = t0 + spec.seconds * 1000;
  let late = 0;
  let started = 0;
  const guard = (p: Promise<void>) => p.catch((e: Error) => void (failure ??= e));
  if (spec.rate === undefined) {
    await Promise.all(
      Array.from({ length: spec.connections }, async () => {
        const cursors = new Map<number, string>();
        while (!failure && performance.now() < end) await guard(one(pick(), cursors));
      }),
    );
  } else {
    const interval = 1000 / spec.rate;
    const cursors = new Map<number, string>();
    const inFlight = new Set<Promise<void>>();
    for (let due = t0; !failure && due < end; due += interval) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (inFlight.size >= spec.connections) {
        late++;
        await Promise.race(inFlight);
        if (performance.now() >= end) break;
        // behind by more than a slot: drop the missed slots (the result reports the pace reached)
        due = Math.max(due, performance.now() - interval);
      }
      started++;
      const p = guard(one(pick(), cursors)).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await Promise.all(inFlight);
  }
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  if (failure) throw failure;
  const quantile = (sorted: readonly number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0);
  const ms = (x: number) => Math.round(x * 10) / 10;
  const ops = spec.ops.map((op, i) => {
    const s = latencies[i]!.sort((a, b) => a - b);
    return { name: op.name, total: s.length, rps: s.length / seconds, p50: ms(quantile(s, 0.5)), p99: ms(quantile(s, 0.99)), max: ms(s.at(-1) ?? 0), timeouts: timeouts[i]! };
  });
  const total = ops.reduce((s, o) => s + o.total, 0);
  return { seconds, total, rps: total / seconds, ops, late, pace: (spec.rate === undefined ? total : started) / spec.seconds };
}

if (process.send) {
  process.once("message", (m: { spec: DriverSpec }) => {
    process.send!({ started: true });
    run(m.spec).then(
      (result) => process.send!({ result }, () => process.exit(0)),
      (e: Error) => process.send!({ error: e.message }, () => process.exit(1)),
    );
  });
}
