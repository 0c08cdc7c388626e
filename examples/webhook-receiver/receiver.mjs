#!/usr/bin/env node
/**
 * An example receiver of flowstore's webhooks (docs/subscriptions.md), with nothing but node: modules.
 *
 *   node receiver.mjs --secret=<the secret POST /subscriptions answered> [--port 8787] [--out deliveries.ndjson] [--fail <n>]
 *
 * It listens on 127.0.0.1, checks each delivery's `Flowstore-Signature` (t=<unix seconds>,v1=<hex
 * HMAC-SHA256 of "<t>.<body>">, at most five minutes old), answers 401 to a body it does not sign and
 * 204 to one it does, and appends every verified delivery to --out as one JSON line. It prints one JSON
 * line per request to stdout (the first: {"listening": <port>}). A digest delivery ({digest}) is printed
 * as its plain text: sending it by mail is this script's job in a real deployment.
 *
 * `--fail <n>` answers 503 to the first n verified deliveries (to watch retries and dead letters).
 * Deliveries are at least once: a receiver that must act once keeps the positions it saw (each event's
 * `position`, unique in the store) and skips repeats.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    secret: { type: "string", default: process.env.WEBHOOK_SECRET },
    port: { type: "string", default: "8787" },
    out: { type: "string" },
    fail: { type: "string", default: "0" },
  },
});
if (!values.secret) {
  console.error("give the webhook's secret: --secret <secret> (or WEBHOOK_SECRET)");
  process.exit(2);
}
const secret = values.secret;
const TOLERANCE_SECONDS = 300;
let failures = Number(values.fail);

/** Why the signature does not hold, or null when it does. */
function check(header, body) {
  if (typeof header !== "string") return "no Flowstore-Signature header";
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=", 2)));
  const t = Number(parts.t);
  if (!Number.isSafeInteger(t)) return "no timestamp";
  if (Math.abs(Date.now() / 1000 - t) > TOLERANCE_SECONDS) return "too old (a replay?)";
  const want = createHmac("sha256", secret).update(`${t}.${body}`).digest();
  const got = Buffer.from(parts.v1 ?? "", "hex");
  return got.length === want.length && timingSafeEqual(got, want) ? null : "bad signature";
}

const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const why = req.method === "POST" ? check(req.headers["flowstore-signature"], body) : "not a POST";
    if (why) {
      print({ rejected: why });
      res.writeHead(401).end();
      return;
    }
    if (failures > 0) {
      failures--;
      print({ failing: true });
      res.writeHead(503).end();
      return;
    }
    const delivery = JSON.parse(body);
    if (values.out) appendFileSync(values.out, `${JSON.stringify(delivery)}\n`);
    if (delivery.digest) print({ digest: delivery.digest.text });
    else print({ delivered: delivery.events.length, positions: delivery.events.map((e) => e.position) });
    res.writeHead(204).end();
  });
});
server.listen(Number(values.port), "127.0.0.1", () => print({ listening: server.address().port }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
