/** Hash routing (`#/projects/p1`): the server serves one page, and ids never reach the server's logs as paths. */
import { Observable } from "./observable.js";

const current = () => decodeHashPath(location.hash);

function decodeHashPath(hash: string): string {
  const p = hash.replace(/^#/, "");
  return p.startsWith("/") ? p : "/projects";
}

export const route = new Observable<string>(current());
window.addEventListener("hashchange", () => (route.value = current()));

export function href(path: string): string {
  return `#${path}`;
}

export function go(path: string): void {
  location.hash = path;
}

/** `/projects/a%2Fb/subprojects/s` → ["projects", "a/b", "subprojects", "s"]. */
export function segments(path: string): string[] {
  return path
    .split("?")[0]!
    .split("/")
    .filter(Boolean)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
}
