/** Free TCP ports on 127.0.0.1, for servers that must be told their port before they start. */
import { createServer } from "node:net";

/** Whether `port` can be bound on 127.0.0.1 right now. */
export async function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** A port that is free, whose cluster bus port (+10000, as Redis Cluster uses) is free too, never 6379. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 1000; tries++) {
    const port = 20000 + Math.floor(Math.random() * 25000);
    if (port === 6379) continue;
    if ((await bindable(port)) && (await bindable(port + 10000))) return port;
  }
  throw new Error("no free port pair found on 127.0.0.1 in 1000 tries");
}
