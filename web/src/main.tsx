/** The explorer's shell: login, the header, and the page for the current route. */
import { render } from "preact";
import { useState } from "preact/hooks";
import { feedState, startFeed, unread } from "./feed.js";
import { useValue } from "./observable.js";
import { ArchivePage } from "./pages/archive.js";
import { NotificationsPage } from "./pages/notifications.js";
import { ProcessDataPage } from "./pages/process-data.js";
import { ProjectPage } from "./pages/project.js";
import { ProjectsPage } from "./pages/projects.js";
import { SubprojectPage } from "./pages/subproject.js";
import { SubscriptionsPage } from "./pages/subscriptions.js";
import { GroupsPage, MePage, UsersPage } from "./pages/users.js";
import { href, route, segments } from "./router.js";
import { asProblem, login, logout, refreshMe, session } from "./session.js";
import { ErrorBox } from "./ui.js";

function Login() {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="login">
      <form
        class="card stack"
        aria-label="Log in"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            await login(username.trim(), password);
          } catch (err) {
            const problem = asProblem(err);
            setError(problem.status === 401 ? "Wrong username or password." : problem.detail);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>flowstore</h1>
        <label>
          Username
          <input name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} required />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required />
        </label>
        <ErrorBox error={error} />
        <button type="submit" disabled={busy}>
          Log in
        </button>
      </form>
    </main>
  );
}

function Page({ path }: { path: string }) {
  const [, query = ""] = path.split("?");
  const seg = segments(path);
  if (seg[0] === "projects" && seg.length === 1) return <ProjectsPage />;
  if (seg[0] === "projects" && seg.length === 2) return <ProjectPage key={seg[1]} p={seg[1]!} />;
  if (seg[0] === "projects" && seg[2] === "subprojects" && (seg.length === 4 || (seg.length === 6 && seg[4] === "workflowitems")))
    return <SubprojectPage key={`${seg[1]}/${seg[3]}`} p={seg[1]!} s={seg[3]!} w={seg[5]} />;
  if (seg[0] === "process-data") return <ProcessDataPage keyspace={seg[1]} recordKey={seg[2]} />;
  if (seg[0] === "archive") return <ArchivePage query={new URLSearchParams(query)} snapshot={seg[1]} />;
  if (seg[0] === "notifications") return <NotificationsPage />;
  if (seg[0] === "subscriptions") return <SubscriptionsPage />;
  if (seg[0] === "users") return <UsersPage u={seg[1]} />;
  if (seg[0] === "me") return <MePage />;
  if (seg[0] === "groups") return <GroupsPage g={seg[1]} />;
  return (
    <main>
      <p>
        No page here. <a href={href("/projects")}>Projects</a>
      </p>
    </main>
  );
}

function App() {
  const s = useValue(session);
  const path = useValue(route);
  const feed = useValue(feedState);
  const unreadCount = useValue(unread);
  if (!s) return <Login />;
  const section = segments(path)[0];
  const admin = s.intents.includes("global.createUser") || s.intents.includes("global.createGroup");
  return (
    <>
      <header class="top">
        <strong class="brand">flowstore</strong>
        <nav aria-label="Sections">
          <a href={href("/projects")} class={section === "projects" ? "active" : ""}>
            Projects
          </a>
          <a href={href("/process-data")} class={section === "process-data" ? "active" : ""}>
            Process data
          </a>
          <a href={href("/archive")} class={section === "archive" ? "active" : ""}>
            Archive
          </a>
          <a href={href("/subscriptions")} class={section === "subscriptions" ? "active" : ""}>
            Subscriptions
          </a>
          {admin ? (
            <a href={href("/users")} class={section === "users" || section === "groups" ? "active" : ""}>
              Users
            </a>
          ) : null}
        </nav>
        <a href={href("/notifications")} class={`inbox${section === "notifications" ? " active" : ""}`}>
          Notifications
          {unreadCount ? (
            <>
              {" "}
              <span class="unread" data-count={unreadCount}>
                {unreadCount}
              </span>
              <span class="visually-hidden"> unread</span>
            </>
          ) : null}
        </a>
        <span class={`feed ${feed}`} title="live updates">
          {feed === "live" ? "● live" : feed === "connecting" ? "○ connecting" : ""}
        </span>
        <a href={href("/me")} class="user" data-user={s.user} title="your account">
          {s.user}
        </a>
        <button type="button" class="secondary" onClick={logout}>
          Log out
        </button>
      </header>
      <Page key={path.split("?")[0]} path={path} />
    </>
  );
}

startFeed();
void refreshMe().catch(() => {});
render(<App />, document.getElementById("app")!);
