/**
 * A typed client for the flowstore server, over fetch. `request` is the generic helper; a
 * problem+json answer becomes a thrown ProblemError carrying the problem. Domain methods sit in
 * namespaces: `users`, `groups`, `globalPermissions`, `projects` / `project(p)` (workflow),
 * `processData`, `archive`, and `events()` (the change feed). Types are the server's route schemas.
 * The web explorer is built on this client too (web/src/session.ts).
 */
import { ArchiveApi } from "./archive.js";
import { API, HttpCore, seg, type ClientOptions, type PageParams } from "./core.js";
import { changeFeed, type FeedMessage, type FeedOptions } from "./events.js";
import { LogApi } from "./log.js";
import type { Assignments, GlobalPermissionChange, Group, GroupPage, Me, NewGroup, NewUser, Permissions as PermissionMap, TokenResponse, User, UserPage } from "./openapi.js";
import { ProcessDataApi } from "./process-data.js";
import { SubscriptionsApi } from "./subscriptions.js";
import { ExchangeRatesApi, NotificationsApi, ProjectHandle, projectPath, projectsPath, SearchableCollection, type NewProject, type Project, type ProjectPage } from "./workflow.js";

export { ProblemError, type TokenPair, type ClientOptions, type Page, type PageParams, type Problem, type RequestOptions, type WriteOptions } from "./core.js";
export type { ArchiveDocument, ArchiveFileInput, RestoredProject, Snapshot, SnapshotQuery, SnapshotSummary } from "./archive.js";
export type { FeedMessage, FeedOptions } from "./events.js";
export type { ConsistencyProofBody, InclusionProofBody, LogInfoBody } from "./log.js";
export type { CreatedSubscription, DeadLetter, Digest, NewSubscription, Subscription } from "./subscriptions.js";
export type { ProcessFields, ProcessRecord, ProcessRecordCreated, PutOptions as ProcessPutOptions, TtlOptions } from "./process-data.js";
export type * from "./workflow.js";
export { whole } from "./workflow.js";
export type { components, operations, paths } from "./openapi.js";
export type { Schemas } from "./types.js";
// The OpenAPI document's named schemas, as openapi-typescript names them (./openapi.ts's root types); Me is the caller: its id, groups and global intents.
export type { TokenResponse, Permissions as PermissionMap, Group, GroupPage, NewGroup, NewUser, User, UserPage, Me } from "./openapi.js";
/** A global intent by name (`global.createProject`…). */
export type GlobalIntent = GlobalPermissionChange["intent"];

export class FlowstoreClient extends HttpCore {
  constructor(options: ClientOptions = {}) {
    super(options);
  }

  /**
   * Logs in and keeps the tokens for later calls (a token held before is not sent). When the access
   * token expires, the next call that gets a 401 spends the refresh token and is sent again.
   */
  async login(username: string, password: string): Promise<TokenResponse> {
    const res = await this.request<TokenResponse>("POST", `${API}/auth/token`, { body: { username, password }, anonymous: true });
    this.useTokens(res);
    return res;
  }

  /** Ends this session on the server (its access and refresh tokens stop working) and forgets its tokens. */
  async logout(): Promise<void> {
    await this.request<void>("POST", `${API}/auth/logout`);
    this.token = this.refreshToken = undefined;
  }

  /** Ends every session of the user, everywhere, and forgets this client's tokens. */
  async logoutAll(): Promise<void> {
    await this.request<void>("POST", `${API}/auth/logout-all`);
    this.token = this.refreshToken = undefined;
  }

  /** Who the token belongs to: id, groups and global intents (any valid token may ask). */
  me(): Promise<Me> {
    return this.request("GET", `${API}/me`);
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
    /** Refused (409, naming them) while the user has assignments, unless `force`. */
    disable: (id: string, options: { force?: boolean } = {}) => this.request<User>("POST", `${API}/users/${seg(id)}/disable`, { query: options.force ? { force: true } : {} }),
    enable: (id: string) => this.request<User>("POST", `${API}/users/${seg(id)}/enable`),
    /** An administrator's reset (global.createUser): the user's tokens are revoked. */
    resetPassword: (id: string, password: string) => this.request<void>("PUT", `${API}/users/${seg(id)}/password`, { body: { password } }),
    assignments: (id: string) => this.request<Assignments>("GET", `${API}/users/${seg(id)}/assignments`),
  };

  /** Changes the caller's own password, given the current one; every token of the caller is revoked. */
  changePassword(currentPassword: string, password: string): Promise<void> {
    return this.request<void>("PUT", `${API}/me/password`, { body: { currentPassword, password } });
  }

  readonly groups = {
    create: (group: NewGroup) => this.request<Group>("POST", `${API}/groups`, { body: group }),
    get: (id: string) => this.request<Group>("GET", `${API}/groups/${seg(id)}`),
    list: (page: PageParams = {}) => this.request<GroupPage>("GET", `${API}/groups`, { query: { ...page } }),
    addMember: (groupId: string, userId: string) => this.request<Group>("POST", `${API}/groups/${seg(groupId)}/members`, { body: { userId } }),
    removeMember: (groupId: string, userId: string) => this.request<Group>("DELETE", `${API}/groups/${seg(groupId)}/members/${seg(userId)}`),
  };

  readonly globalPermissions = {
    list: () => this.request<PermissionMap>("GET", `${API}/global/permissions`),
    grant: (intent: GlobalIntent, identity: string) => this.request<void>("POST", `${API}/global/permissions/grant`, { body: { intent, identity } }),
    revoke: (intent: GlobalIntent, identity: string) => this.request<void>("POST", `${API}/global/permissions/revoke`, { body: { intent, identity } }),
    /** Every global intent at once; answers the intents granted. */
    grantAll: (identity: string) => this.request<{ intents: string[] }>("POST", `${API}/global/permissions/grant-all`, { body: { identity } }),
  };

  /** Create and list projects. */
  readonly projects = new SearchableCollection<Project, NewProject, ProjectPage>(this, projectsPath);

  /** One project, and through it its subprojects and their workflowitems. */
  project(p: string): ProjectHandle {
    return new ProjectHandle(this, projectPath(p));
  }

  readonly processData = new ProcessDataApi(this);

  readonly archive = new ArchiveApi(this);
  /** The transparency log: checkpoints, proofs, cosignatures. */
  readonly log = new LogApi(this);

  /** The caller's notifications: list, count, mark read. */
  readonly notifications = new NotificationsApi(this);
  /** The caller's durable subscriptions to the change feed: pull or webhook, dead letters, the digest. */
  readonly subscriptions = new SubscriptionsApi(this);

  /** Exchange rates as dated data (budget analytics convert at them). */
  readonly exchangeRates = new ExchangeRatesApi(this);

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
