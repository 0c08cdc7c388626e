/**
 * The client's transport over fetch: one `request` helper for JSON exchanges, `exchange` when the
 * answer's headers matter (ETag), `open` for a streamed answer. A problem+json answer (or any error
 * status) becomes a thrown ProblemError carrying the problem. Domain APIs are built on this.
 */
import type { Problem } from "../http/problem.js";

export type { Problem };

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
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly query?: Record<string, string | number | boolean | null | undefined>;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
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
  /** e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string;
  readonly token?: string;
  readonly fetch?: typeof fetch;
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
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Sends a request and answers the Response once its status is a success; throws ProblemError otherwise. */
  async open(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    const res = await this.#fetch(url, { method, headers, body, signal: options.signal });
    if (!res.ok) throw await problemOf(res);
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
