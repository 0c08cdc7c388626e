/** Opens every peer on fresh storage; PostgreSQL only when its server answers (else the reason). */
import { Layout1Peer } from "./layout1.js";
import { Layout2Peer } from "./layout2.js";
import type { Peer } from "./peer.js";
import { connectPostgres, POSTGRES_PEER, PostgresPeer } from "./postgres.js";
import { RawPeer } from "./raw.js";
import { ReplayPeer } from "./replay.js";
import { SqlitePeer } from "./sqlite.js";

export async function openPeers(tmpDir: () => string): Promise<{ peers: Peer[]; skipped: { name: string; reason: string }[] }> {
  const peers: Peer[] = [new RawPeer(tmpDir()), new SqlitePeer(tmpDir())];
  const skipped: { name: string; reason: string }[] = [];
  const pg = await connectPostgres();
  if (typeof pg === "string") skipped.push({ name: POSTGRES_PEER, reason: pg });
  else peers.push(new PostgresPeer(pg));
  peers.push(new ReplayPeer(tmpDir()), new Layout1Peer(tmpDir()), new Layout2Peer(tmpDir()));
  return { peers, skipped };
}
