/**
 * Lingering close (RFC 9112 §9.6; what nginx's `lingering_close` does): how a connection ends whose request
 * was answered before its body was read to the end. That is any refusal while the body is still arriving: a
 * 413 past a limit, a 415 or a 401 on an upload, a 429 or 503 for want of a large-body slot, a multipart part
 * refused half-way; Fastify's own body parser says `Connection: close` after such errors too.
 *
 * Neither plain way out is safe. Keeping the connection open means reading the rest of the body away for as
 * long as the client sends it: a client that stops sending holds the connection, and the server's close with
 * it, until the request timeout (an archive upload past its limit hung a CI run this way). Closing at once
 * means the body still on its way finds the socket closed: the kernel answers it with a reset, and the client
 * gets EPIPE or ECONNRESET instead of the answer (fetch on Node 24, documents.test.ts's bad input).
 *
 * So the answer says `Connection: close`; once it is written the server half-closes (its FIN follows the
 * answer), reads and drops what the client still sends, and closes when the client closes its side or a bound
 * is reached: `LINGER_BYTES` read, or the time the server was given (`timeouts.lingerSeconds`, server.ts).
 * No further request on the connection is served (§9.6). Closing the server cuts lingering connections at
 * once, so neither app.close() nor serve's shutdown waits for them.
 */
import { Socket } from "node:net";
import type { IncomingMessage } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * The most a lingering connection reads after its answer. What a client has in flight when it learns of the
 * answer is what the socket buffers between the two ends hold: a few MiB on Linux (tcp_wmem grows to 4 MiB).
 * A client that sends more than this after the answer did not stop for it, and is cut.
 */
export const LINGER_BYTES = 8 * 1024 * 1024;

/** One lingering connection: what was read since its answer, and the timer that ends it. */
interface Linger {
  read: number;
  timer: NodeJS.Timeout | null;
}

/** The lingering close of one server's connections: server.ts calls it from its onRequest and onSend hooks. */
export class LingeringClose {
  readonly #ms: number;
  readonly #sockets = new Map<Socket, Linger>();
  #closing = false;

  /** How many connections linger now (the tests see that none is left behind). */
  get size(): number {
    return this.#sockets.size;
  }

  /** `seconds`: how long a connection may linger once its answer is written. */
  constructor(seconds: number) {
    this.#ms = seconds * 1000;
  }

  /**
   * From onSend: a refusal (4xx, 5xx) of a request whose body has not arrived in full closes its connection,
   * lingering.
   * Whoever read the body (a multipart parser, a JSON reader) is cut off; the rest is read and dropped.
   */
  answering(request: FastifyRequest, reply: FastifyReply): void {
    const req = request.raw;
    // complete: the parser has seen the body's end (bodiless requests included, but they may be answered
    // before it is set, hence the framing headers).
    // Only a refusal lingers: a success answered before the body's last bytes were parsed (a document upload
    // answers once its file is stored, before the form's closing boundary) read all it wanted, and the rest
    // is on its way; Node reads it and keeps the connection, as for any answer.
    if (reply.statusCode < 400 || req.complete || this.#closing || !hasBody(req)) return;
    // A connection already gone (the client aborted the upload; its answer comes after the close) has
    // nothing to linger on, and kept here it would wait for a 'close' that has fired: a leak anyone could
    // grow. Node sets req.socket to null once the request is destroyed (a pipeline that failed on it); the
    // answer's socket is the same connection.
    const socket = req.socket ?? reply.raw.socket;
    if (socket === null || socket === undefined || socket.destroyed) return;
    reply.header("connection", "close");
    if (this.#sockets.has(socket)) return;
    const linger: Linger = { read: 0, timer: null };
    this.#sockets.set(socket, linger);
    this.#drop(req, socket, linger);
    // Node ends a connection whose answer said close by socket.destroySoon() once the answer is written (its
    // server's resOnFinish): end, and destroy once the end is sent, which resets a body still arriving. This
    // socket's own destroySoon half-closes and lingers instead; Node's stays the close of a connection whose
    // client has closed its side already, and of every one while the server closes.
    const closeSoon = () => Socket.prototype.destroySoon.call(socket);
    socket.destroySoon = () => {
      if (this.#closing || socket.readableEnded) return closeSoon();
      // The client's FIN ends it too: Node's server closes a connection whose client closed its side.
      if (socket.writable) socket.end();
      linger.timer = setTimeout(() => socket.destroy(), this.#ms).unref();
    };
    socket.once("close", () => {
      if (linger.timer) clearTimeout(linger.timer);
      this.#sockets.delete(socket);
    });
  }

  /**
   * From onRequest: false for a request read on a lingering connection (one pipelined after the refused
   * body), which is not served: its body is dropped like the rest, and the connection's bounds end it.
   */
  admits(request: FastifyRequest): boolean {
    const linger = this.#sockets.get(request.raw.socket);
    if (linger === undefined) return true;
    this.#drop(request.raw, request.raw.socket, linger);
    return false;
  }

  /** From preClose: lingering connections are cut; answers sent from now on close their connection at once. */
  close(): void {
    this.#closing = true;
    // answering() keeps no socket that is gone; were one here (null, destroyed), cutting it must not throw and
    // reject the server's close.
    for (const socket of this.#sockets.keys()) if (socket && !socket.destroyed) socket.destroy();
  }

  /** Reads `req` to its end (or the bound, which cuts `socket`, its connection), dropping what it reads. */
  #drop(req: IncomingMessage, socket: Socket, linger: Linger): void {
    req.unpipe();
    req.on("data", (chunk: Buffer) => {
      linger.read += chunk.length;
      if (linger.read > LINGER_BYTES) socket.destroy();
    });
    req.resume();
  }
}

/** Whether a request is framed with a body (RFC 9112 §6.3): a Transfer-Encoding, or a Content-Length above 0. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}
