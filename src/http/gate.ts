/**
 * The server's gate: shut while the store is being replaced (a restore). While it is shut every request
 * answers 503 with Retry-After (a problem, or TruBudget's error body under /api), but for the routes
 * that say `config: { ungated: true }` (liveness and metrics: a probe must not restart the process in
 * the middle of a restore). Shutting it first waits for the requests in flight to finish; streams that
 * never finish (the change feed) are ended by their route, which `onShut` tells.
 *
 * It honours the store's restore fence (compose/fence.ts) as well: shut by a restore on any server of
 * the fleet, it answers 503 here too. The fence is read again when the copy read last is older than
 * FENCE_CACHE_MS (so an idle server reads it at most once per request burst).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { shutReason, type StoreFence } from "../compose/fence.js";
import { UnavailableError } from "../errors.js";

/** What a refused client is told to wait before it asks again. */
export const GATE_RETRY_AFTER_SECONDS = 5;

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route answers while the gate is shut (liveness, metrics). */
    ungated?: boolean;
  }
}

export class Gate {
  /** The responses of the requests in flight. */
  readonly #inFlight = new Set<object>();
  readonly #onShut = new Set<() => void>();
  #shut: string | null = null;
  #changed: (() => void) | null = null;

  constructor(
    /** The store's fence, honoured beside this server's own gate (none: this server's gate alone). */
    private readonly fence?: StoreFence,
    private readonly clock: () => number = Date.now,
  ) {
    const gate = this;
    this.#closed = function (this: object) {
      gate.#inFlight.delete(this);
      gate.#changed?.();
    };
  }

  /**
   * The gate's part of the server's onRequest hook (server.ts, before any route's own): admits the
   * request (`done()`), or refuses it with 503 (`done(error)`).
   */
  admit(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    if (request.routeOptions.config?.ungated === true) done();
    else if (this.#shut !== null) this.#refuse(reply, done, this.#shut);
    else if (!this.fence) this.#admit(reply, done);
    else {
      const cached = this.fence.cached();
      if (cached.fresh) this.#decide(reply, done, shutReason(cached.state, this.clock()));
      else
        this.fence.reason().then(
          (why) => this.#decide(reply, done, why),
          (err: unknown) => done(err as Error),
        );
    }
  }

  #decide(reply: FastifyReply, done: (error?: Error) => void, why: string | null): void {
    if (why === null) this.#admit(reply, done);
    else this.#refuse(reply, done, why);
  }

  #refuse(reply: FastifyReply, done: (error?: Error) => void, why: string): void {
    reply.header("retry-after", String(GATE_RETRY_AFTER_SECONDS));
    done(new UnavailableError(`${why}: retry after ${GATE_RETRY_AFTER_SECONDS} s`));
  }

  /** Counts the response in flight until its connection closes (one listener for all: no closure per request). */
  #admit(reply: FastifyReply, done: (error?: Error) => void): void {
    this.#inFlight.add(reply.raw);
    // A response closes once: `on`, not `once` (no wrapper per request).
    reply.raw.on("close", this.#closed);
    done();
  }

  /** A closed response's listener, `this` being the response. */
  readonly #closed: (this: object) => void;

  /** Why the gate is shut, or null while it is open. */
  get shutFor(): string | null {
    return this.#shut;
  }

  /** Calls `listener` whenever the gate shuts (to end streams that would hold it up); returns its removal. */
  onShut(listener: () => void): () => void {
    this.#onShut.add(listener);
    return () => this.#onShut.delete(listener);
  }

  /**
   * Shuts the gate for `reason`, waits until no request but `own` (the one asking) is in flight, runs
   * `work`, and opens the gate again. When `work` fails, `stayShut(error)` may name a reason to keep it
   * shut for (the store is not whole); the error is thrown on. Refused (503) while the gate is shut.
   */
  async run<T>(reason: string, own: FastifyReply, work: () => Promise<T>, stayShut?: (error: unknown) => Promise<string | null>): Promise<T> {
    if (this.#shut !== null) throw new UnavailableError(`${this.#shut}: retry after ${GATE_RETRY_AFTER_SECONDS} s`);
    this.#shut = reason;
    let keep: string | null = null;
    try {
      for (const listener of this.#onShut) listener();
      await new Promise<void>((resolve) => {
        const check = (): void => {
          for (const res of this.#inFlight) if (res !== own.raw) return;
          this.#changed = null;
          resolve();
        };
        this.#changed = check;
        check();
      });
      return await work();
    } catch (e) {
      keep = (await stayShut?.(e).catch(() => null)) ?? null;
      throw e;
    } finally {
      this.#shut = keep;
    }
  }
}
