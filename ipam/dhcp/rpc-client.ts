/**
 * The plugin's side of the daemon protocol (rpc-protocol.ts): Go net/rpc over HTTP, one connection
 * per plugin run, calls made one after the other on it. Works against our daemon and Go's.
 */
import { createConnection, type Socket } from "node:net";
import { throwIfEnded } from "../../shared/cni/call-scope.ts";
import type { CallScope } from "../../shared/cni/types.ts";
import { GobDecoder, GobEncoder, type GobType } from "./gob.ts";
import { RPC_CONNECTED, RPC_PATH, RequestType, asStruct } from "./rpc-protocol.ts";

/** The daemon could not be reached at all (nothing listening, no socket file, permission, not Go RPC). */
export class DaemonUnreachableError extends Error {
  override name = "DaemonUnreachableError";
}

/** The daemon answered the call with an error (`rpc.Response.Error`). */
export class DaemonCallError extends Error {
  override name = "DaemonCallError";
}

/** Longest HTTP answer to CONNECT we read before giving up on the peer. */
const MAX_HANDSHAKE_BYTES = 4096;

export class RpcClient {
  readonly #conn: Socket;
  readonly #enc = new GobEncoder();
  readonly #dec = new GobDecoder();
  #seq = 0;
  #closed = false;
  /** Wakes the call waiting for bytes. */
  #wake: (() => void) | undefined;
  #failure: Error | undefined;

  private constructor(conn: Socket) {
    this.#conn = conn;
    conn.on("data", (d: Buffer) => {
      this.#dec.push(d);
      this.#wake?.();
    });
    conn.on("error", (err) => this.#fail(new Error(`connection to the DHCP daemon failed: ${err.message}`, { cause: err })));
    conn.on("close", () => this.#fail(new Error("the DHCP daemon closed the connection without answering")));
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    this.#wake?.();
  }

  /** Connects and completes the HTTP CONNECT handshake; DaemonUnreachableError when that fails. */
  static dial(socketPath: string): Promise<RpcClient> {
    return new Promise((resolve, reject) => {
      const conn = createConnection({ path: socketPath });
      let header = "";
      const unreachable = (why: string, cause?: unknown): void => {
        conn.destroy();
        reject(new DaemonUnreachableError(`dial-http unix ${socketPath}: ${why}`, { cause }));
      };
      const onData = (d: Buffer): void => {
        header += d.toString("latin1");
        const blank = /\r?\n\r?\n/.exec(header);
        if (blank === null) {
          if (header.length > MAX_HANDSHAKE_BYTES) unreachable("oversized HTTP answer");
          return;
        }
        conn.off("data", onData);
        conn.off("error", onError);
        conn.off("close", onClose);
        const status = header.slice(0, blank.index).split(/\r?\n/)[0] ?? "";
        if (!/^HTTP\/1\.[01] /.test(status) || status.slice(9) !== RPC_CONNECTED) {
          unreachable(`unexpected HTTP response: ${status.slice(9) || JSON.stringify(header.slice(0, 80))}`);
          return;
        }
        const client = new RpcClient(conn);
        const rest = Buffer.from(header.slice(blank.index + blank[0].length), "latin1");
        if (rest.byteLength > 0) client.#dec.push(rest);
        resolve(client);
      };
      const onError = (err: Error): void => unreachable(err.message, err);
      const onClose = (): void => unreachable("connection closed during the handshake");
      conn.on("connect", () => conn.write(`CONNECT ${RPC_PATH} HTTP/1.0\n\n`));
      conn.on("data", onData);
      conn.on("error", onError);
      conn.on("close", onClose);
    });
  }

  async #nextValue(): Promise<unknown> {
    for (;;) {
      const v = this.#dec.next();
      if (v !== undefined) return v.value;
      if (this.#failure !== undefined) throw this.#failure;
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }

  /**
   * One call: sends the request header and `args`, waits for the matching answer. Rejects with
   * DaemonCallError when the daemon answers with an error. No overall timeout: an ADD may
   * legitimately wait out the DHCP retries.
   */
  async call(method: string, argsType: GobType, args: Record<string, unknown>): Promise<unknown> {
    if (this.#closed) throw new Error("RPC client is closed");
    const seq = this.#seq++;
    this.#conn.write(this.#enc.encode(RequestType, { ServiceMethod: method, Seq: seq }));
    this.#conn.write(this.#enc.encode(argsType, args));
    const header = asStruct(await this.#nextValue(), "rpc.Response");
    const reply = await this.#nextValue();
    if ((header["Seq"] ?? 0) !== seq) throw new Error(`the DHCP daemon answered call ${String(header["Seq"])} instead of ${seq}`);
    const error = header["Error"];
    if (typeof error === "string" && error !== "") throw new DaemonCallError(error);
    return reply;
  }

  close(): void {
    this.#closed = true;
    this.#conn.destroy();
  }
}

/**
 * Dials, makes the calls `fn` makes, closes. A wait on another process (the daemon may take minutes
 * to answer an ADD while it retries DHCP): when the call's scope ends, the connection is closed and
 * the call's CallEndedError is thrown, as a killed plugin process would have dropped it.
 */
export async function withDaemon<T>(socketPath: string, scope: CallScope, fn: (c: RpcClient) => Promise<T>): Promise<T> {
  throwIfEnded(scope);
  return scope.waitOn(async (signal) => {
    const dialing = RpcClient.dial(socketPath);
    const client = await Promise.race([dialing, rejectOnAbort(signal)]).catch((err: unknown) => {
      void dialing.then((late) => late.close(), () => {});
      throw err;
    });
    const drop = () => client.close();
    signal.addEventListener("abort", drop);
    try {
      return await fn(client);
    } catch (err) {
      throwIfEnded(scope);
      throw err;
    } finally {
      signal.removeEventListener("abort", drop);
      client.close();
    }
  });
}

/** Rejects with the signal's reason when it aborts (never settles otherwise). */
function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}
