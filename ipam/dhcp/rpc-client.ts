/** The plugin's side of the daemon protocol (rpc-protocol.ts): one request, one answer. */
import { createConnection } from "node:net";
import { parseResponse, PROTOCOL_VERSION, type RpcArgs, type RpcMethod, type RpcResponse } from "./rpc-protocol.ts";

/** The daemon could not be reached at all (nothing listening, no socket file, permission). */
export class DaemonUnreachableError extends Error {
  override name = "DaemonUnreachableError";
}

/** Sends one call and resolves with the daemon's answer. No overall timeout: an ADD may legitimately wait out the DHCP retries. */
export function callDaemon(socketPath: string, method: RpcMethod, args: RpcArgs): Promise<RpcResponse> {
  return new Promise((resolve, reject) => {
    let connected = false;
    let settled = false;
    const chunks: Buffer[] = [];
    const conn = createConnection({ path: socketPath });
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      conn.destroy();
      fn();
    };
    conn.on("connect", () => {
      connected = true;
      conn.write(`${JSON.stringify({ version: PROTOCOL_VERSION, method, args })}\n`);
    });
    conn.on("data", (d: Buffer) => {
      chunks.push(d);
      const text = Buffer.concat(chunks).toString("utf8");
      const nl = text.indexOf("\n");
      if (nl < 0) return;
      finish(() => {
        try {
          resolve(parseResponse(text.slice(0, nl)));
        } catch (err) {
          reject(err);
        }
      });
    });
    conn.on("error", (err: NodeJS.ErrnoException) => {
      finish(() =>
        reject(
          connected
            ? new Error(`connection to the DHCP daemon failed: ${err.message}`, { cause: err })
            : new DaemonUnreachableError(`dial unix ${socketPath}: ${err.code ?? ""} ${err.message}`.replace(/\s+/g, " "), { cause: err }),
        ),
      );
    });
    conn.on("close", () => {
      finish(() => reject(new Error("the DHCP daemon closed the connection without answering")));
    });
  });
}
