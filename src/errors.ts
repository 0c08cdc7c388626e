/**
 * The one error taxonomy of flowstore. Every layer throws these; the HTTP layer maps `status` to the
 * response and `field` to the problem+json body, so a library user and an HTTP client see the same error.
 */
export type ErrorCode =
  | "validation"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "precondition_failed"
  | "too_large"
  | "too_many_requests"
  | "insufficient_storage"
  | "unavailable"
  | "configuration";

export class FlowstoreError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    /** The offending field (a JSON pointer-ish path such as `data.amount`), when there is one. */
    readonly field?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends FlowstoreError {
  constructor(message: string, field?: string) {
    super("validation", 400, message, field);
  }
}

export class UnauthorizedError extends FlowstoreError {
  constructor(message = "authentication required") {
    super("unauthorized", 401, message);
  }
}

export class ForbiddenError extends FlowstoreError {
  constructor(message: string) {
    super("forbidden", 403, message);
  }
}

export class NotFoundError extends FlowstoreError {
  constructor(message: string) {
    super("not_found", 404, message);
  }
}

/** A failed precondition (key absent / key at version), a stale version or a duplicate id. */
export class ConflictError extends FlowstoreError {
  constructor(message: string, field?: string) {
    super("conflict", 409, message, field);
  }
}

/**
 * A stale version given as a precondition (`ifVersion`, HTTP's If-Match): the resource changed since the
 * caller read it. Still a ConflictError to library users; over HTTP it is RFC 9110's 412.
 */
export class StaleVersionError extends ConflictError {
  override readonly code = "precondition_failed" as const;
  override readonly status = 412;
  constructor(message: string) {
    super(message, "version");
  }
}

export class TooLargeError extends FlowstoreError {
  constructor(message: string, readonly limit: number) {
    super("too_large", 413, message);
  }
}

/**
 * The backend refused a commit for lack of space (a full disk or quota, a file size limit, LMDB's map
 * full): nothing of it was applied; reads go on, and writes resume once space is freed.
 */
export class InsufficientStorageError extends FlowstoreError {
  constructor(message: string) {
    super("insufficient_storage", 507, message);
  }
}

/** Too many attempts (failed log-ins): retry after `retryAfterSeconds` (429, with Retry-After). */
export class TooManyRequestsError extends FlowstoreError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super("too_many_requests", 429, message);
  }
}

/** The backend cannot be reached (Redis down, store closed): retry later. */
export class UnavailableError extends FlowstoreError {
  constructor(message: string) {
    super("unavailable", 503, message);
  }
}

/**
 * The store cannot be served as configured (a key that does not fit the stored data, a missing store):
 * found when it is opened, so a server refuses to start (the CLI's exit code 3) instead of failing reads.
 */
export class ConfigurationError extends FlowstoreError {
  constructor(message: string, field?: string) {
    super("configuration", 500, message, field);
  }
}
