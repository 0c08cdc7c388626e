/**
 * The server's logger: pino, JSON lines, with every place a credential could appear redacted
 * (Authorization and Cookie headers, password and token fields at any depth we log).
 */
import { CONFIG, readEnv } from "../config.js";
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "headers.authorization",
  "headers.cookie",
  "password",
  "token",
  "*.password",
  "*.token",
  "*.*.password",
  "*.*.token",
  "body.password",
  "body.token",
];

export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  const config: LoggerOptions = {
    level: options.level ?? readEnv("FLOWSTORE_LOG_LEVEL") ?? CONFIG.FLOWSTORE_LOG_LEVEL.default,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id: the client's `x-request-id` when it is a sane token, else a fresh uuid. */
export function requestId(req: IncomingMessage): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}
