/**
 * User and group administration: the users (create; per user: enable or disable, reset the password,
 * grant every global intent, the resources assigned to it) and the groups (create; add and remove
 * members). Disabling a user who still has assignments is refused by the server (409 naming them):
 * the page shows that answer and offers to disable anyway. And the caller's own page: change one's
 * password (given the current one; every session of the user ends, this one too).
 */
import { useState } from "preact/hooks";
import type { Group, NewUser, User } from "../../../src/client/index.js";
import { go, href } from "../router.js";
import { asProblem, client, every, session, setSession } from "../session.js";
import { ErrorBox, Field, fmtDate, FormError, useForm, useLoad } from "../ui.js";
import { forgetDirectory, IdentityPicker } from "../picker.js";
import { resourceHref } from "./notifications.js";

const enc = encodeURIComponent;

function AdminNav({ active }: { active: "users" | "groups" }) {
  return (
    <nav class="keyspaces" aria-label="Users and groups">
      <a class={active === "users" ? "active" : ""} href={href("/users")}>
        Users
      </a>
      <a class={active === "groups" ? "active" : ""} href={href("/groups")}>
        Groups
      </a>
    </nav>
  );
}

export function UsersPage({ u }: { u?: string }) {
  const users = useLoad(() => every<User>((page) => client.users.list(page)), []);
  const [creating, setCreating] = useState(false);
  return (
    <main>
      <div class="head">
        <h1>Users</h1>
        <button type="button" onClick={() => setCreating((c) => !c)}>
          {creating ? "Cancel" : "New user"}
        </button>
      </div>
      <AdminNav active="users" />
      {creating ? (
        <CreateUser
          onCreated={(id) => {
            setCreating(false);
            void users.reload();
            go(`/users/${enc(id)}`);
          }}
        />
      ) : null}
      <div class={u ? "split" : ""}>
        <div>
          <ErrorBox error={users.error} />
          <table class="list">
            <thead>
              <tr>
                <th>User</th>
                <th>Name</th>
                <th>Organization</th>
                <th>Groups</th>
                <th>State</th>
              </tr>
            </thead>
            <tbody>
              {(users.data ?? []).map((x) => (
                <tr data-id={x.id} class={x.id === u ? "selected" : ""}>
                  <td>
                    <a href={href(`/users/${enc(x.id)}`)}>{x.id}</a>
                  </td>
                  <td>{x.displayName}</td>
                  <td>{x.organization ?? ""}</td>
                  <td>{x.groups.join(", ")}</td>
                  <td class="state">{x.enabled ? "enabled" : <span class="badge">disabled</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {u ? <UserPanel key={u} id={u} onChange={() => void users.reload()} /> : null}
      </div>
    </main>
  );
}

function CreateUser({ onCreated }: { onCreated: (id: string) => void }) {
  const [v, setV] = useState({ id: "", displayName: "", organization: "", password: "" });
  const form = useForm("POST /api/v1/users");
  const set = (k: keyof typeof v) => (x: string) => setV((s) => ({ ...s, [k]: x }));
  const names = ["id", "displayName", "organization", "password"];
  return (
    <form
      class="card stack"
      aria-label="New user"
      onSubmit={async (e) => {
        e.preventDefault();
        const body: NewUser = { id: v.id.trim(), displayName: v.displayName, password: v.password, ...(v.organization.trim() ? { organization: v.organization.trim() } : {}) };
        if (await form.submit(() => client.users.create(body), body)) {
          forgetDirectory();
          onCreated(body.id);
        }
      }}
    >
      <Field form={form} name="id" label="User id" value={v.id} onInput={set("id")} />
      <Field form={form} name="displayName" label="Name" value={v.displayName} onInput={set("displayName")} />
      <Field form={form} name="organization" label="Organization (optional)" value={v.organization} onInput={set("organization")} />
      <Field form={form} name="password" label="Password" type="password" value={v.password} onInput={set("password")} />
      <FormError form={form} fields={names} />
      <button type="submit" disabled={form.busy}>
        Create user
      </button>
    </form>
  );
}

function UserPanel({ id, onChange }: { id: string; onChange: () => void }) {
  const user = useLoad(() => client.users.get(id), [id]);
  const assignments = useLoad(() => client.users.assignments(id), [id]);
  const toggle = useForm();
  const password = useForm("PUT /api/v1/users/{}/password");
  const grant = useForm();
  const [newPassword, setNewPassword] = useState("");
  const [notice, setNotice] = useState<string | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const changed = async (text: string) => {
    setNotice(text);
    await Promise.all([user.reload(), assignments.reload()]);
    onChange();
  };
  const disable = async (force: boolean) => {
    setNotice(null);
    setRefused(null);
    try {
      await client.users.disable(id, { force });
      await changed(`${id} is disabled${force ? " (still assigned)" : ""}.`);
    } catch (e) {
      const problem = asProblem(e);
      // Refused while the user has assignments: the server names them; disabling anyway stays possible.
      if (problem.status === 409) setRefused(problem.detail);
      else await toggle.submit(() => Promise.reject(problem));
    }
  };
  const u = user.data;
  return (
    <aside class="panel" aria-label="User">
      <h2>{id}</h2>
      <ErrorBox error={user.error} />
      {u ? (
        <div class="stack">
          <dl class="facts">
            <dt>Name</dt>
            <dd>{u.displayName}</dd>
            <dt>Organization</dt>
            <dd>{u.organization ?? <span class="muted">none</span>}</dd>
            <dt>Groups</dt>
            <dd>{u.groups.join(", ") || <span class="muted">none</span>}</dd>
            <dt>State</dt>
            <dd class="user-state">{u.enabled ? "enabled" : "disabled"}</dd>
            <dt>Created</dt>
            <dd>{fmtDate(u.createdAt)}</dd>
          </dl>
          <div class="row">
            {u.enabled ? (
              <button type="button" class="danger" disabled={toggle.busy} onClick={() => void disable(false)}>
                Disable
              </button>
            ) : (
              <button type="button" disabled={toggle.busy} onClick={() => void toggle.submit(async () => (await client.users.enable(id), await changed(`${id} is enabled.`)))}>
                Enable
              </button>
            )}
            <button
              type="button"
              class="secondary"
              disabled={grant.busy}
              onClick={() => void grant.submit(async () => changed(`Granted ${(await client.globalPermissions.grantAll(id)).intents.length} global intents to ${id}.`))}
            >
              Grant all global intents
            </button>
          </div>
          {refused ? (
            <div class="notice conflict" role="alert" data-kind="conflict">
              <p>Not disabled: {refused}</p>
              <button type="button" class="danger" onClick={() => void disable(true)}>
                Disable anyway
              </button>
            </div>
          ) : null}
          <ErrorBox error={toggle.error ?? grant.error} />
          {notice ? (
            <p class="notice ok" role="status">
              {notice}
            </p>
          ) : null}
          <form
            class="inline"
            aria-label="Reset password"
            onSubmit={async (e) => {
              e.preventDefault();
              setNotice(null);
              if (await password.submit(() => client.users.resetPassword(id, newPassword), { password: newPassword })) {
                setNewPassword("");
                setNotice(`The password of ${id} is reset; its sessions are ended.`);
              }
            }}
          >
            <Field form={password} name="password" label="New password" type="password" value={newPassword} onInput={setNewPassword} />
            <button type="submit" disabled={password.busy}>
              Reset password
            </button>
            <FormError form={password} fields={["password"]} />
          </form>
          <h3>Assigned to</h3>
          <ErrorBox error={assignments.error} />
          <ul class="assignments">
            {(assignments.data?.items ?? []).map((a) => (
              <li>
                <a href={resourceHref(a.ids.map((x, i) => ({ type: ["project", "subproject", "workflowitem"][i]!, id: x })))}>{a.displayName ?? a.ids.join("/")}</a>{" "}
                <span class="muted small">
                  {a.type} · {a.status}
                </span>
              </li>
            ))}
          </ul>
          {assignments.data && assignments.data.items.length === 0 ? <p class="muted">Nothing.</p> : null}
        </div>
      ) : null}
    </aside>
  );
}

export function GroupsPage({ g }: { g?: string }) {
  const groups = useLoad(() => every<Group>((page) => client.groups.list(page)), []);
  const [v, setV] = useState({ id: "", displayName: "" });
  const [creating, setCreating] = useState(false);
  const form = useForm("POST /api/v1/groups");
  return (
    <main>
      <div class="head">
        <h1>Groups</h1>
        <button type="button" onClick={() => setCreating((c) => !c)}>
          {creating ? "Cancel" : "New group"}
        </button>
      </div>
      <AdminNav active="groups" />
      {creating ? (
        <form
          class="card stack"
          aria-label="New group"
          onSubmit={async (e) => {
            e.preventDefault();
            const id = v.id.trim();
            if (await form.submit(() => client.groups.create({ id, displayName: v.displayName }), { id, displayName: v.displayName })) {
              forgetDirectory();
              setCreating(false);
              setV({ id: "", displayName: "" });
              void groups.reload();
              go(`/groups/${enc(id)}`);
            }
          }}
        >
          <Field form={form} name="id" label="Group id" value={v.id} onInput={(x) => setV((s) => ({ ...s, id: x }))} />
          <Field form={form} name="displayName" label="Name" value={v.displayName} onInput={(x) => setV((s) => ({ ...s, displayName: x }))} />
          <FormError form={form} fields={["id", "displayName"]} />
          <button type="submit" disabled={form.busy}>
            Create group
          </button>
        </form>
      ) : null}
      <div class={g ? "split" : ""}>
        <div>
          <ErrorBox error={groups.error} />
          <table class="list">
            <thead>
              <tr>
                <th>Group</th>
                <th>Name</th>
                <th>Members</th>
              </tr>
            </thead>
            <tbody>
              {(groups.data ?? []).map((x) => (
                <tr data-id={x.id} class={x.id === g ? "selected" : ""}>
                  <td>
                    <a href={href(`/groups/${enc(x.id)}`)}>{x.id}</a>
                  </td>
                  <td>{x.displayName}</td>
                  <td class="num">{x.members.length}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {g ? <GroupPanel key={g} id={g} onChange={() => void groups.reload()} /> : null}
      </div>
    </main>
  );
}

function GroupPanel({ id, onChange }: { id: string; onChange: () => void }) {
  const group = useLoad(() => client.groups.get(id), [id]);
  const [member, setMember] = useState("");
  const form = useForm("POST /api/v1/groups/{}/members");
  const change = (run: () => Promise<Group>, body?: unknown) =>
    form.submit(async () => {
      group.set(await run());
      forgetDirectory();
      onChange();
    }, body);
  return (
    <aside class="panel" aria-label="Group">
      <h2>{id}</h2>
      <ErrorBox error={group.error} />
      {group.data ? (
        <div class="stack">
          <p class="muted">{group.data.displayName}</p>
          <ul class="members">
            {group.data.members.map((m) => (
              <li data-member={m}>
                <a href={href(`/users/${enc(m)}`)}>{m}</a>{" "}
                <button type="button" class="link" aria-label={`Remove ${m}`} disabled={form.busy} onClick={() => void change(() => client.groups.removeMember(id, m))}>
                  ×
                </button>
              </li>
            ))}
          </ul>
          {group.data.members.length === 0 ? <p class="muted">No members.</p> : null}
          <form
            class="inline"
            aria-label="Add member"
            onSubmit={async (e) => {
              e.preventDefault();
              if (await change(() => client.groups.addMember(id, member), { userId: member })) setMember("");
            }}
          >
            <IdentityPicker form={form} name="userId" label="User" value={member} onInput={setMember} groups={false} />
            <button type="submit" disabled={form.busy}>
              Add member
            </button>
          </form>
          <FormError form={form} fields={["userId"]} />
        </div>
      ) : null}
    </aside>
  );
}

export function MePage() {
  const me = session.value;
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const form = useForm("PUT /api/v1/me/password");
  return (
    <main>
      <h1>{me?.user}</h1>
      <p class="muted">
        Groups: {me?.groups.join(", ") || "none"} · global intents: {me?.intents.length ?? 0}
      </p>
      <form
        class="card stack"
        aria-label="Change my password"
        onSubmit={async (e) => {
          e.preventDefault();
          // The server revokes every token of the user: this session is over, log in again.
          if (await form.submit(() => client.changePassword(current, next), { currentPassword: current, password: next })) setSession(null);
        }}
      >
        <Field form={form} name="currentPassword" label="Current password" type="password" value={current} onInput={setCurrent} />
        <Field form={form} name="password" label="New password" type="password" value={next} onInput={setNext} />
        <FormError form={form} fields={["currentPassword", "password"]} />
        <button type="submit" disabled={form.busy}>
          Change password
        </button>
      </form>
    </main>
  );
}
