/** Durable subscriptions (docs/subscriptions.md): the caller's, their dead letters, the digest. */
import { API, seg, type HttpCore } from "./core.js";
import type {
  CreatedSubscription,
  DeadLetter,
  DeadLetterList,
  Digest,
  CreateSubscription as NewSubscription,
  Replayed,
  Subscription,
  SubscriptionEvents,
  SubscriptionList,
} from "./openapi.js";

export type { Subscription, CreateSubscription as NewSubscription, CreatedSubscription, DeadLetter, Digest } from "./openapi.js";

const path = `${API}/subscriptions`;

export class SubscriptionsApi {
  constructor(private readonly core: HttpCore) {}
  /** The caller's own. */
  async list(): Promise<Subscription[]> {
    return (await this.core.request<SubscriptionList>("GET", path)).items;
  }
  /** A webhook's answer carries its HMAC secret: shown this once. */
  create(body: NewSubscription): Promise<CreatedSubscription> {
    return this.core.request("POST", path, { body });
  }
  get(id: string): Promise<Subscription> {
    return this.core.request("GET", `${path}/${seg(id)}`);
  }
  async delete(id: string): Promise<void> {
    await this.core.request("DELETE", `${path}/${seg(id)}`);
  }
  /** Acknowledges `ack` (when given), then reads the events past the position. */
  pull(id: string, query: { ack?: string; limit?: number } = {}): Promise<SubscriptionEvents> {
    return this.core.request("GET", `${path}/${seg(id)}/events`, { query });
  }
  async deadLetters(id: string): Promise<DeadLetter[]> {
    return (await this.core.request<DeadLetterList>("GET", `${path}/${seg(id)}/dead-letters`)).items;
  }
  /** POSTs dead letter `n` again: delivered, it is removed. */
  replay(id: string, n: number): Promise<Replayed> {
    return this.core.request("POST", `${path}/${seg(id)}/dead-letters/${n}/replay`);
  }
  /** The caller's open assignments, as JSON with their plain text. */
  digest(): Promise<Digest> {
    return this.core.request("GET", `${path}/digest`);
  }
}
