/** Removes every key of a namespace from the Redis (or every master of the cluster) behind a URL. */
import { Cluster, Redis } from "ioredis";
import { parseRedisUrl } from "../../src/kv/redis/connect.js";

export async function deleteNamespace(url: string, namespace: string): Promise<number> {
  const target = parseRedisUrl(url);
  const client = target.cluster ? new Cluster(target.nodes, { clusterRetryStrategy: () => null }) : new Redis({ ...target.nodes[0]!, db: target.db, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    const nodes = client instanceof Cluster ? client.nodes("master") : [client];
    if (client instanceof Cluster && nodes.length === 0) {
      await new Promise<void>((resolve, reject) => {
        client.once("ready", resolve);
        client.once("error", reject);
      });
    }
    let removed = 0;
    for (const node of client instanceof Cluster ? client.nodes("master") : nodes) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${namespace}:*`, "COUNT", 1000);
        cursor = next;
        // One key per call: on a cluster node, keys of different slots cannot share a command.
        await Promise.all(keys.map((k) => node.unlink(k)));
        removed += keys.length;
      } while (cursor !== "0");
    }
    return removed;
  } finally {
    client.disconnect();
  }
}
