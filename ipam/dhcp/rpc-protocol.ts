/**
 * The plugin ↔ daemon protocol (ours; not Go's net/rpc+gob — see the module doc of dhcp.ts).
 *
 * Transport: a unix stream socket (default /run/cni/dhcp.sock). One call per connection:
 * 1. the plugin writes ONE request as a single line of JSON terminated by `\n`;
 * 2. the daemon answers with ONE line of JSON terminated by `\n` and closes the connection.
 *
 * Request:  `{"version":1,"method":"add"|"check"|"del","args":{"containerID","netns","ifName","args","path","stdinData"}}`
 *           `stdinData` is the network config as text (UTF-8), `netns` is absolute.
 * Response: `{"ok":true,"result":<CNI 1.1.0 result>}` (add/check) or `{"ok":true}` (del), or
 *           `{"ok":false,"error":{"code":<CNI code>,"msg":"…"}}`.
 *
 * Limits: a request line longer than {@link MAX_REQUEST_BYTES} is refused; an unknown `version`
 * or `method` is refused with code 999.
 */
import type { Result } from "../../shared/cni/types.ts";

export const PROTOCOL_VERSION = 1;
export const MAX_REQUEST_BYTES = 1 << 20;

export type RpcMethod = "add" | "check" | "del";

export interface RpcArgs {
  containerID: string;
  netns: string;
  ifName: string;
  args: string;
  path: string;
  stdinData: string;
}

export interface RpcRequest {
  version: number;
  method: RpcMethod;
  args: RpcArgs;
}

export type RpcResponse = { ok: true; result?: Result } | { ok: false; error: { code: number; msg: string } };

export class RpcProtocolError extends Error {
  override name = "RpcProtocolError";
}

function isString(v: unknown): v is string {
  return typeof v === "string";
}

/** Validates one request line; throws {@link RpcProtocolError} with a readable reason. */
export function parseRequest(line: string): RpcRequest {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    throw new RpcProtocolError(`request is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof v !== "object" || v === null) throw new RpcProtocolError("request is not a JSON object");
  const r = v as Record<string, unknown>;
  if (r["version"] !== PROTOCOL_VERSION) throw new RpcProtocolError(`unsupported protocol version ${JSON.stringify(r["version"])}`);
  const method = r["method"];
  if (method !== "add" && method !== "check" && method !== "del") throw new RpcProtocolError(`unknown method ${JSON.stringify(method)}`);
  const a = r["args"];
  if (typeof a !== "object" || a === null) throw new RpcProtocolError("request has no args object");
  const args = a as Record<string, unknown>;
  const fields = ["containerID", "netns", "ifName", "args", "path", "stdinData"] as const;
  for (const f of fields) if (!isString(args[f])) throw new RpcProtocolError(`args.${f} must be a string`);
  return {
    version: PROTOCOL_VERSION,
    method,
    args: {
      containerID: args["containerID"] as string,
      netns: args["netns"] as string,
      ifName: args["ifName"] as string,
      args: args["args"] as string,
      path: args["path"] as string,
      stdinData: args["stdinData"] as string,
    },
  };
}

/** Validates one response line. */
export function parseResponse(line: string): RpcResponse {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    throw new RpcProtocolError(`daemon response is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof v !== "object" || v === null) throw new RpcProtocolError("daemon response is not a JSON object");
  const r = v as Record<string, unknown>;
  if (r["ok"] === true) {
    const result = r["result"];
    if (result === undefined) return { ok: true };
    if (typeof result !== "object" || result === null) throw new RpcProtocolError("daemon result is not an object");
    return { ok: true, result: result as Result };
  }
  const e = r["error"];
  if (r["ok"] !== false || typeof e !== "object" || e === null) throw new RpcProtocolError("malformed daemon response");
  const code = (e as Record<string, unknown>)["code"];
  const msg = (e as Record<string, unknown>)["msg"];
  if (typeof code !== "number" || typeof msg !== "string") throw new RpcProtocolError("malformed daemon error");
  return { ok: false, error: { code, msg } };
}
