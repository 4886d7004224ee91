/**
 * The daemon's side of the protocol (../rpc-protocol.ts): answers Go net/rpc over HTTP on each
 * accepted connection, so Go's plugin and ours are served alike. Calls on one connection run
 * concurrently, as Go's server runs them; answers go out as each completes, matched by `Seq`.
 *
 * Callers other than root and `ownUid` (SO_PEERCRED, peer-cred.ts) get the refusal as the error
 * of every call they make, after the handshake, so they print it as `error calling <method>: …`.
 * A connection that breaks the protocol (no CONNECT, undecodable gob, oversized message) is
 * closed.
 */
import type { Server, Socket } from "node:net";
import { messageOf } from "../../../shared/cni/errors.ts";
import { GobDecoder, GobEncoder, type GobType } from "../gob.ts";
import { EmptyType, RPC_CONNECTED, RPC_PATH, ResponseType, argsFromGob, asStruct, unroutableCall, type RpcArgs } from "../rpc-protocol.ts";
import { refusePeer } from "./peer-cred.ts";

/** A method's answer: the gob type of its reply and the reply. */
export interface Reply {
  type: GobType;
  value: Record<string, unknown>;
}

export type Methods = Readonly<Record<string, (args: RpcArgs) => Promise<Reply>>>;

/** Longest HTTP request head accepted before the gob stream. */
const MAX_HANDSHAKE_BYTES = 4096;
/** Longest gob message accepted (a call's argument carries the network config). */
export const MAX_MESSAGE_BYTES = 1 << 20;

/** The HTTP answer Go's `rpc.HandleHTTP` handler gives to anything but `CONNECT /_goRPC_`. */
function httpRefusal(requestLine: string): string | undefined {
  const [method, path] = requestLine.split(" ");
  if (method !== "CONNECT") return "HTTP/1.0 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n405 must CONNECT\n";
  if (path !== RPC_PATH) return "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n404 page not found\n";
  return undefined;
}

/** Serves one accepted connection. */
export function serveConnection(conn: Socket, methods: Methods, log: (s: string) => void, ownUid: number): void {
  conn.on("error", () => undefined);
  const refusal = refusePeer(conn, ownUid);
  if (refusal !== undefined) log(refusal);
  const enc = new GobEncoder();
  const dec = new GobDecoder(MAX_MESSAGE_BYTES);
  let head: Buffer | undefined = Buffer.alloc(0);
  let header: Record<string, unknown> | undefined;

  const answer = (h: Record<string, unknown>, error: string, reply: Reply): void => {
    if (conn.destroyed) return;
    conn.write(enc.encode(ResponseType, { ServiceMethod: h["ServiceMethod"], Seq: h["Seq"], Error: error }));
    conn.write(enc.encode(reply.type, reply.value));
  };
  const empty: Reply = { type: EmptyType, value: {} };
  const services = new Set(Object.keys(methods).map((m) => m.slice(0, m.lastIndexOf("."))));

  const dispatch = (h: Record<string, unknown>, body: unknown): void => {
    const method = typeof h["ServiceMethod"] === "string" ? h["ServiceMethod"] : "";
    if (refusal !== undefined) return answer(h, refusal, empty);
    const fn = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (fn === undefined) return answer(h, unroutableCall(method, services), empty);
    let args: RpcArgs;
    try {
      args = argsFromGob(body);
    } catch (err) {
      return answer(h, `rpc: ${messageOf(err)}`, empty);
    }
    fn(args).then(
      (reply) => answer(h, "", reply),
      (err: unknown) => answer(h, messageOf(err), empty),
    );
  };

  const onGob = (): void => {
    for (;;) {
      const v = dec.next();
      if (v === undefined) return;
      if (header === undefined) header = asStruct(v.value, "rpc.Request");
      else {
        const h = header;
        header = undefined;
        dispatch(h, v.value);
      }
    }
  };

  conn.on("data", (chunk: Buffer) => {
    try {
      if (head === undefined) {
        dec.push(chunk);
        onGob();
        return;
      }
      head = Buffer.concat([head, chunk]);
      const text = head.toString("latin1");
      const blank = /\r?\n\r?\n/.exec(text);
      if (blank === null) {
        if (head.byteLength > MAX_HANDSHAKE_BYTES) conn.destroy();
        return;
      }
      const rest = head.subarray(blank.index + blank[0].length);
      head = undefined;
      const no = httpRefusal(text.slice(0, blank.index).split(/\r?\n/)[0] ?? "");
      if (no !== undefined) {
        conn.end(no);
        return;
      }
      conn.write(`HTTP/1.0 ${RPC_CONNECTED}\n\n`);
      dec.push(rest);
      onGob();
    } catch (err) {
      log(`closing an RPC connection: ${messageOf(err)}`);
      conn.destroy();
    }
  });
}

/** Serves every connection `server` accepts. */
export function serveConnections(server: Server, methods: Methods, log: (s: string) => void, ownUid: number): void {
  server.on("connection", (conn: Socket) => serveConnection(conn, methods, log, ownUid));
}
