/**
 * `flowstore user add|disable|enable|passwd` and `flowstore group add|member add`: operator commands
 * working directly on the store as the system actor (stop the server first for an embedded store).
 */
import { Option, type Command } from "commander";
import type { Identity } from "../identity/index.js";
import { SYSTEM } from "../access/actor.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { readPassword } from "./password.js";
import { print, withStore } from "./store.js";

function withIdentity<T>(options: StoreOptions, run: (identity: Identity) => Promise<T>): Promise<T> {
  return withStore(options, (store) => run(store.identity));
}

export function identityCommands(program: Command): void {
  const user = program.command("user").description("manage users (as the system actor)");
  storeOptions(user.command("add <id>").description("create a user; the password is read from FLOWSTORE_PASSWORD, stdin or a prompt"))
    .addOption(new Option("--display-name <name>", "display name (default: the id)"))
    .addOption(new Option("--email <address>", "e-mail address (personal data: stored sealed, erased with the user's subject)"))
    .action(async (id: string, options: StoreOptions & { displayName?: string; email?: string }) => {
      const password = await readPassword();
      const email = options.email !== undefined ? { email: options.email } : {};
      print(await withIdentity(options, (identity) => identity.createUser(SYSTEM, { id, displayName: options.displayName ?? id, ...email, password })));
    });
  storeOptions(user.command("disable <id>").description("disable a user: it can no longer log in and its tokens stop working")).action(async (id: string, options: StoreOptions) =>
    print(await withIdentity(options, (identity) => identity.disableUser(SYSTEM, id))),
  );
  storeOptions(user.command("enable <id>").description("enable a disabled user")).action(async (id: string, options: StoreOptions) =>
    print(await withIdentity(options, (identity) => identity.enableUser(SYSTEM, id))),
  );
  storeOptions(user.command("passwd <id>").description("set a user's password (read from FLOWSTORE_PASSWORD, stdin or a prompt)")).action(
    async (id: string, options: StoreOptions) => {
      const password = await readPassword("new password: ");
      await withIdentity(options, (identity) => identity.setPassword(SYSTEM, id, password));
      print({ id, passwordChanged: true });
    },
  );

  const group = program.command("group").description("manage groups (as the system actor)");
  storeOptions(group.command("add <id>").description("create a group"))
    .addOption(new Option("--display-name <name>", "display name (default: the id)"))
    .addOption(new Option("--member <userId...>", "initial members"))
    .action(async (id: string, options: StoreOptions & { displayName?: string; member?: string[] }) =>
      print(await withIdentity(options, (identity) => identity.createGroup(SYSTEM, { id, displayName: options.displayName ?? id, members: options.member ?? [] }))),
    );
  const member = group.command("member").description("manage group members");
  storeOptions(member.command("add <groupId> <userId>").description("add a user to a group")).action(async (groupId: string, userId: string, options: StoreOptions) =>
    print(await withIdentity(options, (identity) => identity.addMember(SYSTEM, groupId, userId))),
  );
}
