/**
 * A small typed client for the flowstore server, over fetch. `request` is the generic helper; a
 * problem+json answer becomes a thrown ProblemError carrying the problem. Domain methods sit in
 * namespaces (`users`, `groups`, `globalPermissions`); more domains add theirs the same way.
 */
import type { Problem } from "../http/problem.js";
import type { TokenResponse } from "../http/routes/auth.js";
import type { PermissionChange, PermissionMap } from "../http/routes/global.js";
import type { Group, GroupPage, NewGroup } from "../http/routes/groups.js";
import type { NewUser, User, UserPage } from "../http/routes/users.js";

export type { Problem, TokenResponse, PermissionMap, Group, GroupPage, NewGroup, NewUser, User, UserPage };

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

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string;
  readonly token?: string;
  readonly fetch?: typeof fetch;
}

const API = "/api/v1";
const seg = (s: string) => encodeURIComponent(s);

export class FlowstoreClient {
  readonly baseUrl: string;
  token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Sends a request; answers the parsed JSON (undefined for 204), throws ProblemError for an error answer. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
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
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    if (!res.ok) {
      let problem: Problem;
      try {
        problem = JSON.parse(text) as Problem;
        if (typeof problem?.status !== "number") throw new Error("not a problem");
      } catch {
        problem = { type: "about:blank", title: res.statusText, status: res.status, detail: text.slice(0, 500) };
      }
      throw new ProblemError(problem);
    }
    if (res.status === 204 || text === "") return undefined as T;
    return (type.includes("json") ? JSON.parse(text) : text) as T;
  }

  /** Logs in and keeps the token for later calls. */
  async login(username: string, password: string): Promise<TokenResponse> {
    const res = await this.request<TokenResponse>("POST", `${API}/auth/token`, { body: { username, password } });
    this.token = res.token;
    return res;
  }

  health(): Promise<{ status: string }> {
    return this.request("GET", "/health");
  }

  ready(): Promise<{ status: string }> {
    return this.request("GET", "/ready");
  }

  readonly users = {
    create: (user: NewUser) => this.request<User>("POST", `${API}/users`, { body: user }),
    get: (id: string) => this.request<User>("GET", `${API}/users/${seg(id)}`),
    list: (page: PageParams = {}) => this.request<UserPage>("GET", `${API}/users`, { query: { ...page } }),
    disable: (id: string) => this.request<User>("POST", `${API}/users/${seg(id)}/disable`),
  };

  readonly groups = {
    create: (group: NewGroup) => this.request<Group>("POST", `${API}/groups`, { body: group }),
    get: (id: string) => this.request<Group>("GET", `${API}/groups/${seg(id)}`),
    list: (page: PageParams = {}) => this.request<GroupPage>("GET", `${API}/groups`, { query: { ...page } }),
    addMember: (groupId: string, userId: string) =>
      this.request<Group>("POST", `${API}/groups/${seg(groupId)}/members`, { body: { userId } }),
  };

  readonly globalPermissions = {
    list: () => this.request<PermissionMap>("GET", `${API}/global/permissions`),
    grant: (intent: PermissionChange["intent"], identity: string) =>
      this.request<void>("POST", `${API}/global/permissions/grant`, { body: { intent, identity } }),
    revoke: (intent: PermissionChange["intent"], identity: string) =>
      this.request<void>("POST", `${API}/global/permissions/revoke`, { body: { intent, identity } }),
  };

  /** Every item of a paginated list, page by page. */
  async *all<T>(list: (page: PageParams) => Promise<{ items: T[]; nextCursor: string | null }>, limit = 100): AsyncGenerator<T> {
    let cursor: string | null = null;
    do {
      const page: { items: T[]; nextCursor: string | null } = await list({ cursor, limit });
      yield* page.items;
      cursor = page.nextCursor;
    } while (cursor !== null);
  }
}
