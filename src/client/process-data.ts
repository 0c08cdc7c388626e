/**
 * Process data (the registry platform's BPM interim storage): records addressed by keyspace and key (the
 * key as one URL-encoded path segment, its `/`s as %2F: the `{key}` parameter of the OpenAPI document), start forms and start messages under generated uuids, and process instances.
 */
import { API, seg, type HttpCore, type Page, type PageParams } from "./core.js";
import type { ProcessRecord, ProcessRecordCreated } from "./openapi.js";
import type { Query } from "./types.js";

export type { ProcessRecord, ProcessRecordCreated } from "./openapi.js";
export type TtlOptions = Pick<Query<"putProcessDataByKey">, "ttlMs">;
/** A write's options: its time to live, and the process instance it is registered under (a batch signature's root). */
export type PutOptions = Query<"putProcessDataByKey">;
export type ProcessFields = Record<string, unknown>;

const base = `${API}/process-data`;
const keyPath = seg;

export class ProcessDataApi {
  constructor(private readonly core: HttpCore) {}

  /** Stores (replaces) the record at a key of a keyspace (`form-submissions` or `bpm-form-submissions`, …). */
  put(keyspace: string, key: string, fields: ProcessFields, options: PutOptions = {}): Promise<ProcessRecord> {
    return this.core.request("PUT", `${base}/${seg(keyspace)}/${keyPath(key)}`, { body: fields, query: { ...options } });
  }
  /** The record at a key, with its access token decrypted. */
  get(keyspace: string, key: string): Promise<ProcessRecord> {
    return this.core.request("GET", `${base}/${seg(keyspace)}/${keyPath(key)}`);
  }
  delete(keyspace: string, key: string): Promise<void> {
    return this.core.request("DELETE", `${base}/${seg(keyspace)}/${keyPath(key)}`);
  }
  /** A page of a keyspace in key order (never with access tokens). */
  list(keyspace: string, page: PageParams = {}): Promise<Page<ProcessRecord>> {
    return this.core.request("GET", `${base}/${seg(keyspace)}`, { query: { ...page } });
  }
  /** Stores a start-form submission under a generated uuid. */
  startForm(processDefinitionKey: string, fields: ProcessFields, options: TtlOptions = {}): Promise<ProcessRecordCreated> {
    return this.core.request("POST", `${base}/form-submissions/process-definition/${seg(processDefinitionKey)}/start-form`, { body: fields, query: { ...options } });
  }
  /** Stores a start-message payload under a generated uuid. */
  startMessage(processDefinitionKey: string, fields: ProcessFields, options: TtlOptions = {}): Promise<ProcessRecordCreated> {
    return this.core.request("POST", `${base}/message-payloads/process-definition/${seg(processDefinitionKey)}/start-message`, { body: fields, query: { ...options } });
  }
  /** A page of a process instance's records. */
  instance(processInstanceId: string, page: PageParams = {}): Promise<Page<ProcessRecord>> {
    return this.core.request("GET", `${base}/process-instances/${seg(processInstanceId)}`, { query: { ...page } });
  }
  /** Deletes every record of a finished process instance, and the form-submission keys given with it (its start form). */
  deleteInstance(processInstanceId: string, alsoKeys: readonly string[] = []): Promise<{ deleted: number }> {
    return this.core.request("DELETE", `${base}/process-instances/${seg(processInstanceId)}`, { query: { alsoKeys: [...alsoKeys] } });
  }
  /** Creates a form schema (a Form.io form) under its `name`, lower-cased; a ConflictError (409) when one exists. */
  createFormSchema(formData: Record<string, unknown>, options: TtlOptions = {}): Promise<ProcessRecord> {
    return this.core.request("POST", `${base}/form-schemas`, { body: { formData }, query: { ...options } });
  }
  /** Replaces an existing form schema (its key is case-insensitive); a NotFoundError (404) when there is none. */
  updateFormSchema(key: string, formData: Record<string, unknown>, options: TtlOptions = {}): Promise<ProcessRecord> {
    return this.put("form-schemas", key, { formData }, options);
  }
}
