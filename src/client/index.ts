/**
 * A typed client for the flowstore server, over fetch. `request` is the generic helper; a
 * problem+json answer becomes a thrown ProblemError carrying the problem. Domain methods sit in
 * namespaces: `users`, `groups`, `globalPermissions`, `projects` / `project(p)` (workflow),
 * `processData`, and `events()` (the change feed). Types are the server's route schemas.
 */
import type { TokenResponse } from "../http/routes/auth.js";
import type { PermissionChange, PermissionMap } from "../http/routes/global.js";
import type { Group, GroupPage, NewGroup } from "../http/routes/groups.js";
import type { NewUser, User, UserPage } from "../http/routes/users.js";
import { API, HttpCore, seg, type ClientOptions, type PageParams } from "./core.js";
import { changeFeed, type FeedMessage, type FeedOptions } from "./events.js";
import { ProcessDataApi } from "./process-data.js";
import { Collection, ProjectHandle, projectPath, projectsPath, type NewProject, type Project, type ProjectPage } from "./workflow.js";

export { ProblemError, type ClientOptions, type Page, type PageParams, type Problem, type RequestOptions, type WriteOptions } from "./core.js";
export type { FeedMessage, FeedOptions } from "./events.js";
export type { ProcessFields, ProcessRecord, ProcessRecordCreated, TtlOptions } from "./process-data.js";
export type * from "./workflow.js";
export type { TokenResponse, PermissionMap, Group, GroupPage, NewGroup, NewUser, User, UserPage };

export class FlowstoreClient extends HttpCore {
  constructor(options: ClientOptions) {
    super(options);
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

  /** Create and list projects. */
  readonly projects = new Collection<Project, NewProject, ProjectPage>(this, projectsPath);

  /** One project, and through it its subprojects and their workflowitems. */
  project(p: string): ProjectHandle {
    return new ProjectHandle(this, projectPath(p));
  }

  readonly processData = new ProcessDataApi(this);

  /** The change feed, filtered by the server to what this caller may view; runs until the loop ends or the signal aborts. */
  events(options: FeedOptions = {}): AsyncGenerator<FeedMessage, void, undefined> {
    return changeFeed(this, options);
  }

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
