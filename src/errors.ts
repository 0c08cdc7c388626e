/**
 * The one error taxonomy of flowstore. Every layer throws these; the HTTP layer maps `status` to the
 * response and `field` to the problem+json body, so a library user and an HTTP client see the same error.
 */
/** Each error code with its HTTP status: declared once, the classes below derive from it. */
const STATUS = {
  validation: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  /** A write the server takes only with If-Match (serve --require-if-match) came without one. */
  precondition_required: 428,
  too_large: 413,
  too_many_requests: 429,
  insufficient_storage: 507,
  unavailable: 503,
  /** A store that cannot be served as configured: found when it is opened, so a server refuses to start. */
  configuration: 500,
} as const;

export type ErrorCode = keyof typeof STATUS;

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

/** The base class of one code: its status from the table above, a message and an optional field. */
function kind(code: ErrorCode) {
  return class extends FlowstoreError {
    constructor(message: string, field?: string) {
      super(code, STATUS[code], message, field);
    }
  };
}

export class ValidationError extends kind("validation") {}

export class UnauthorizedError extends kind("unauthorized") {
  constructor(message = "authentication required") {
    super(message);
  }
}

/**
 * Right credentials of a disabled user: to the native API the same 401 as wrong ones; TruBudget's API
 * answers it 403 (its NotAuthorized), so it is told apart.
 */
export class DisabledLoginError extends UnauthorizedError {
  constructor() {
    super("invalid username or password");
  }
}

export class ForbiddenError extends kind("forbidden") {}

/**
 * Right credentials of a user whose password an administrator reset requiring a new one (issue 29): no
 * session opens until the user sets its own password (`POST /auth/password`).
 */
export class PasswordChangeRequiredError extends ForbiddenError {
  constructor(by: string) {
    super(`${by} reset this password and requires a new one: choose yours at POST /auth/password (username, currentPassword, password)`, "password");
  }
}

export class NotFoundError extends kind("not_found") {}

/** A failed precondition (key absent / key at version), a stale version or a duplicate id. */
export class ConflictError extends kind("conflict") {}

/**
 * A stale version given as a precondition (`ifVersion`, HTTP's If-Match): the resource changed since the
 * caller read it. Still a ConflictError to library users; over HTTP it is RFC 9110's 412.
 */
export class StaleVersionError extends ConflictError {
  override readonly code = "precondition_failed" as const;
  override readonly status = STATUS.precondition_failed;
  constructor(message: string) {
    super(message, "version");
  }
}

/**
 * A condition the request states that the resource does not meet, though it is no version of the
 * resource that is stale: If-Match with only weak or unquoted tags, which the strong comparison of
 * RFC 9110 §13.1.1 never matches. HTTP's 412.
 */
export class PreconditionFailedError extends kind("precondition_failed") {}

/** A write sent unconditionally to a server that requires If-Match on writes to existing resources: 428 (RFC 6585 §3). */
export class PreconditionRequiredError extends kind("precondition_required") {}

export class TooLargeError extends kind("too_large") {
  constructor(
    message: string,
    readonly limit: number,
  ) {
    super(message);
  }
}

/**
 * The backend refused a commit for lack of space (a full disk or quota, a file size limit, LMDB's map
 * full): nothing of it was applied; reads go on, and writes resume once space is freed.
 */
export class InsufficientStorageError extends kind("insufficient_storage") {}

/** Too many attempts (failed log-ins): retry after `retryAfterSeconds` (429, with Retry-After). */
export class TooManyRequestsError extends kind("too_many_requests") {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The backend cannot be reached (Redis down, store closed): retry later. */
export class UnavailableError extends kind("unavailable") {}

/**
 * The store cannot be served as configured (a key that does not fit the stored data, a missing store):
 * found when it is opened, so a server refuses to start (the CLI's exit code 3) instead of failing reads.
 */
export class ConfigurationError extends kind("configuration") {}
