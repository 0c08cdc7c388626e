/**
 * Choosing a user or a group by name: the directory (every user and group, which any logged-in user
 * may list) read once per page, and a select of them for the permission and assignment forms.
 */
import type { Group, User } from "../../src/client/index.js";
import { client, every } from "./session.js";
import { Field, type FormState, useLoad } from "./ui.js";

export interface Directory {
  readonly users: readonly User[];
  readonly groups: readonly Group[];
}

let cached: Promise<Directory> | null = null;

/** Every user and group; read again after `forget()` (a user or group was created). */
export function directory(): Promise<Directory> {
  cached ??= Promise.all([every<User>((page) => client.users.list(page)), every<Group>((page) => client.groups.list(page))]).then(([users, groups]) => ({ users, groups }));
  cached.catch(() => (cached = null));
  return cached;
}

export function forgetDirectory(): void {
  cached = null;
}

export function useDirectory() {
  return useLoad(directory, []);
}

/** How an identity is shown: "Eve Viewer (eve)", "Auditors (group auditors)", or the id alone when unknown. */
export function identityName(dir: Directory | null, id: string): string {
  const u = dir?.users.find((x) => x.id === id);
  if (u) return u.displayName && u.displayName !== id ? `${u.displayName} (${id})` : id;
  const g = dir?.groups.find((x) => x.id === id);
  if (g) return `${g.displayName || id} (group ${id})`;
  return id;
}

/** A select of every user (enabled ones) and group by name, its value the chosen id. */
export function IdentityPicker(props: { form: FormState; name: string; label: string; value: string; onInput: (id: string) => void; users?: boolean; groups?: boolean }) {
  const dir = useDirectory();
  const users = props.users === false ? [] : (dir.data?.users ?? []).filter((u) => u.enabled);
  const groups = props.groups === false ? [] : (dir.data?.groups ?? []);
  const choices = [
    ...users.map((u) => ({ value: u.id, label: identityName(dir.data, u.id), group: "Users" })),
    ...groups.map((g) => ({ value: g.id, label: identityName(dir.data, g.id), group: "Groups" })),
  ];
  return (
    <Field
      form={props.form}
      name={props.name}
      label={props.label}
      value={props.value}
      onInput={props.onInput}
      choices={choices}
      placeholder={dir.loading ? "Loading…" : "Choose…"}
    />
  );
}
