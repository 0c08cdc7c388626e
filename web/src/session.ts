/**
 * The explorer's session over the project's typed client (src/client), the one API client of the
 * project: this tab's tokens live in sessionStorage and the access token in the client's Authorization
 * header, never in a URL. An expired access token is refreshed by the client (its refresh token, rotated
 * and stored again here); a 401 that a refresh cannot cure ends the session (the client's onUnauthorized).
 */
import { FlowstoreClient, ProblemError, type Page, type PageParams } from "../../src/client/index.js";
import { Observable } from "./observable.js";

export interface Session {
  readonly token: string;
  readonly refreshToken?: string;
  readonly user: string;
  readonly groups: readonly string[];
  /** The global intents the user holds (GET /me). */
  readonly intents: readonly string[];
}

const KEY = "flowstore.session";

function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export const session = new Observable<Session | null>(loadSession());

/** Same origin: the server that serves the page answers its API. */
export const client = new FlowstoreClient({
  token: session.value?.token,
  refreshToken: session.value?.refreshToken,
  onUnauthorized: () => setSession(null),
  // A transparent refresh rotated the tokens: keep the new ones for this tab.
  onTokens: ({ token, refreshToken }) => {
    const s = session.value;
    if (s && client.token === token) setSession({ ...s, token, refreshToken });
  },
});

export function setSession(s: Session | null): void {
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  client.token = s?.token;
  client.refreshToken = s?.refreshToken;
  session.value = s;
}

export async function login(username: string, password: string): Promise<void> {
  const { token, refreshToken } = await client.login(username, password);
  try {
    const me = await client.me();
    setSession({ token, refreshToken, user: me.id, groups: me.groups, intents: me.intents });
  } catch (e) {
    client.token = session.value?.token;
    client.refreshToken = session.value?.refreshToken;
    throw e;
  }
}

/** Reads the user's groups and global intents again (they may have changed since the login). */
export async function refreshMe(): Promise<void> {
  const s = session.value;
  if (!s) return;
  const me = await client.me();
  const now = session.value; // the tokens may have been refreshed meanwhile
  if (now?.user === s.user) setSession({ ...now, groups: me.groups, intents: me.intents });
}

/** Ends the session on the server too (best effort: the tab forgets its tokens either way). */
export function logout(): void {
  if (session.value) void client.logout().catch(() => {});
  setSession(null);
}

/** Any failure as a problem to show: the server's, or status 0 when it could not be asked. */
export function asProblem(e: unknown): ProblemError {
  if (e instanceof ProblemError) return e;
  const detail = e instanceof TypeError ? "the server cannot be reached" : String(e);
  return new ProblemError({ type: "about:blank", title: "Error", status: 0, detail });
}

/** The input a problem names, as the forms name their fields: `body.items[0].x` → `items.0.x`. */
export function fieldOf(e: ProblemError): string | undefined {
  return e.field?.replace(/^body\.?/, "").replace(/\[(\d+)\]/g, ".$1") || undefined;
}

/** Every item of a list, in order (1000 a request). */
export async function every<T>(list: (page: PageParams) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of client.all(list, 1000)) out.push(item);
  return out;
}

/** The client's handle of a resource from its ids: [p], [p, s] or [p, s, w]. */
export function handleOf(ids: readonly string[]) {
  const [p, s, w] = ids as [string, string?, string?];
  const project = client.project(p);
  if (s === undefined) return project;
  const subproject = project.subproject(s);
  return w === undefined ? subproject : subproject.workflowitem(w);
}
