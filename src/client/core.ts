/**
 * The client's transport over fetch: one `request` helper for JSON exchanges, `exchange` when the
 * answer's headers matter (ETag), `open` for a streamed answer. A problem+json answer (or any error
 * status) becomes a thrown ProblemError carrying the problem. Domain APIs are built on this.
 *
 * It runs in Node and in a browser alike (the web explorer bundles it): only fetch, Headers,
 * URLSearchParams and FormData, and the OpenAPI document's types (./openapi.ts), so nothing of the
 * server reaches a bundle or a consumer's node_modules. The token travels in the Authorization header only, never in a URL.
 */
import type { Problem } from "./openapi.js";

export type { Problem } from "./openapi.js";

/** An error answer from the server: `status` and the problem+json body. */
export class ProblemError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.name = "ProblemError";
  }
  get status(): number {
    return this.problem.status;
  }
  get field(): string | undefined {
    return this.problem.field;
  }
  get detail(): string {
    return this.problem.detail;
  }
}

export interface RequestOptions {
  /** JSON, or FormData sent as multipart/form-data. */
  readonly body?: unknown;
  /** A text body, sent as text/plain (a signed note) unless `headers` name its type (text/csv); instead of `body`. */
  readonly text?: string;
  /** A list value repeats its parameter (`?alsoKeys=a&alsoKeys=b`). */
  readonly query?: Record<string, string | number | boolean | readonly string[] | null | undefined>;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
  /** Send no token (logging in): a 401 then means the credentials, not the session. */
  readonly anonymous?: boolean;
}

export interface PageParams {
  readonly cursor?: string | null;
  readonly limit?: number;
}

/** A page of a list: `items` and the cursor of the next page (null on the last). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8080; omitted in a browser page served by the server itself (same origin). */
  readonly baseUrl?: string;
  readonly token?: string;
  /** A refresh token: spent at POST /auth/refresh when a request's access token is refused (401), then the request is sent again. */
  readonly refreshToken?: string;
  /** Called with the new tokens after each transparent refresh (e.g. to store them). */
  readonly onTokens?: (tokens: TokenPair) => void;
  readonly fetch?: typeof fetch;
  /** Called when the server refuses the token a request carried (401): the session is over, e.g. log out. */
  readonly onUnauthorized?: (error: ProblemError) => void;
}

/** The tokens a login or a refresh answers (POST /auth/token, POST /auth/refresh). */
export interface TokenPair {
  readonly token: string;
  readonly expiresAt: number;
  readonly refreshToken: string;
  readonly refreshExpiresAt: number;
}

export const API = "/api/v1";
/** One path segment, encoded. */
export const seg = (s: string): string => encodeURIComponent(s);

async function problemOf(res: Response): Promise<ProblemError> {
  const text = await res.text();
  let problem: Problem;
  try {
    problem = JSON.parse(text) as Problem;
    if (typeof problem?.status !== "number") throw new Error("not a problem");
  } catch {
    problem = { type: "about:blank", title: res.statusText, status: res.status, detail: text.slice(0, 500) };
  }
  return new ProblemError(problem);
}

export class HttpCore {
  readonly baseUrl: string;
  token: string | undefined;
  refreshToken: string | undefined;
  /**
   * The reason sent with every write from now on (the `Flowstore-Reason` header, percent-encoded), which
   * the server records in each event the write appends (`payload.reason`); undefined sends none.
   */
  reason: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #onUnauthorized: ((error: ProblemError) => void) | undefined;
  readonly #onTokens: ((tokens: TokenPair) => void) | undefined;
  /** The refresh under way: concurrent 401s wait for one refresh rather than spending the token twice. */
  #refreshing: Promise<boolean> | undefined;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
    this.token = options.token;
    // Called unbound: a browser's fetch refuses to run as a method of another object.
    const f = options.fetch ?? globalThis.fetch;
    this.#fetch = (input, init) => f(input, init);
    this.#onUnauthorized = options.onUnauthorized;
    this.#onTokens = options.onTokens;
    this.refreshToken = options.refreshToken;
  }

  /** Keeps a login's or a refresh's tokens for later calls. */
  useTokens(tokens: TokenPair): void {
    this.token = tokens.token;
    this.refreshToken = tokens.refreshToken;
    this.#onTokens?.(tokens);
  }

  /** Spends the refresh token for new tokens; false when there is none or the server refuses it. */
  async #refresh(): Promise<boolean> {
    const refreshToken = this.refreshToken;
    if (refreshToken === undefined) return false;
    this.#refreshing ??= (async () => {
      try {
        const res = await this.#fetch(`${this.baseUrl}${API}/auth/refresh`, {
          method: "POST",
          headers: { accept: "application/json", "content-type": "application/json" },
          body: JSON.stringify({ refreshToken }),
        });
        if (!res.ok) {
          if (this.refreshToken === refreshToken) this.refreshToken = undefined;
          return false;
        }
        this.useTokens((await res.json()) as TokenPair);
        return true;
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** Sends a request and answers the Response once its status is a success; throws ProblemError otherwise. */
  async open(method: string, path: string, options: RequestOptions = {}, retried = false): Promise<Response> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (Array.isArray(v)) for (const item of v as readonly string[]) query.append(k, item);
      else if (v !== undefined && v !== null) query.set(k, String(v));
    }
    const qs = query.toString();
    const url = this.baseUrl + path + (qs ? `?${qs}` : "");
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    const token = options.anonymous ? undefined : this.token;
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (this.reason !== undefined && method !== "GET" && method !== "HEAD") headers["flowstore-reason"] ??= encodeURIComponent(this.reason);
    let body: string | FormData | undefined;
    if (options.body instanceof FormData)
      body = options.body; // fetch writes the multipart boundary
    else if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    } else if (options.text !== undefined) {
      headers["content-type"] ??= "text/plain; charset=utf-8";
      body = options.text;
    }
    const res = await this.#fetch(url, { method, headers, body, signal: options.signal });
    if (!res.ok) {
      const error = await problemOf(res);
      if (res.status === 401 && token !== undefined) {
        // The access token expired or was refused: refresh once (unless another call already did) and send again.
        if (!retried && (this.token !== token || (await this.#refresh()))) return this.open(method, path, options, true);
        this.#onUnauthorized?.(error);
      }
      throw error;
    }
    return res;
  }

  /** Sends a request; answers the parsed body (undefined for 204) and the answer's headers. */
  async exchange<T>(method: string, path: string, options: RequestOptions = {}): Promise<{ body: T; headers: Headers }> {
    const res = await this.open(method, path, options);
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    const body = (res.status === 204 || text === "" ? undefined : type.includes("json") ? JSON.parse(text) : text) as T;
    return { body, headers: res.headers };
  }

  /** Sends a request; answers the parsed JSON (undefined for 204), throws ProblemError for an error answer. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.exchange<T>(method, path, options)).body;
  }
}

/** `If-Match` for a write: a version number (as in meta.version) or an ETag as the server gave it. */
export interface WriteOptions {
  readonly ifMatch?: number | string;
}

export function ifMatchHeaders(options: WriteOptions = {}): Record<string, string> {
  const v = options.ifMatch;
  if (v === undefined) return {};
  return { "if-match": typeof v === "number" ? `"${v}"` : v };
}
