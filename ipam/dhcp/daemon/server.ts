/**
 * The daemon's request handling: ADD acquires (or returns the existing) lease for
 * `<containerID>/<network>/<ifname>`, CHECK only looks (read-only), DEL releases. Concurrent
 * requests for one key share a single acquisition; different keys never wait for each other.
 */
import { createServer, type Server, type Socket } from "node:net";
import { CNI_ERROR_CODES, CniError, messageOf } from "../../../shared/cni/errors.ts";
import { loadDhcpConfig } from "../config.ts";
import { MAX_REQUEST_BYTES, parseRequest, type RpcRequest, type RpcResponse } from "../rpc-protocol.ts";
import { Lease, type LeaseDeps } from "./lease.ts";
import { refusePeer } from "./peer-cred.ts";

function failure(err: unknown): RpcResponse {
  const code = err instanceof CniError ? err.code : CNI_ERROR_CODES.Internal;
  return { ok: false, error: { code, msg: messageOf(err) } };
}

/** The network name of a forwarded config (DEL/CHECK must work even when options are invalid). */
function networkName(stdinData: string): string {
  const conf = JSON.parse(stdinData) as unknown;
  const name = typeof conf === "object" && conf !== null ? (conf as Record<string, unknown>)["name"] : undefined;
  return typeof name === "string" ? name : "";
}

export class LeaseManager {
  readonly #deps: LeaseDeps;
  readonly #leases = new Map<string, Lease>();
  readonly #pending = new Map<string, Promise<Lease>>();

  constructor(deps: LeaseDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#leases.size;
  }

  /** Adopts a resumed lease and starts its loop. */
  adopt(lease: Lease): void {
    this.#leases.set(lease.req.key, lease);
    this.#startLoop(lease);
  }

  #startLoop(lease: Lease): void {
    lease.start((why) => {
      if (this.#leases.get(lease.req.key) === lease && why !== "stopped") {
        this.#leases.delete(lease.req.key);
        this.#deps.log(`${lease.req.key}: ${why}`);
      }
    });
  }

  async handle(req: RpcRequest): Promise<RpcResponse> {
    const a = req.args;
    try {
      if (a.ifName === "") throw new CniError(CNI_ERROR_CODES.InvalidEnvironmentVariables, "CNI_IFNAME is empty");
      if (req.method === "del") {
        await this.release(`${a.containerID}/${networkName(a.stdinData)}/${a.ifName}`);
        return { ok: true };
      }
      if (req.method === "check") {
        const key = `${a.containerID}/${networkName(a.stdinData)}/${a.ifName}`;
        const lease = this.#leases.get(key) ?? (await this.#pending.get(key));
        if (lease === undefined) throw new CniError(CNI_ERROR_CODES.Internal, `no DHCP lease held for ${JSON.stringify(key)}`);
        return { ok: true, result: lease.result() };
      }
      const conf = loadDhcpConfig(JSON.parse(a.stdinData) as Record<string, unknown>, a.args);
      if (!a.netns.startsWith("/")) throw new CniError(CNI_ERROR_CODES.InvalidNetNS, `netns path ${JSON.stringify(a.netns)} is not absolute`);
      const key = `${a.containerID}/${conf.network}/${a.ifName}`;
      const lease = await this.#acquire(key, req);
      return { ok: true, result: lease.result() };
    } catch (err) {
      return failure(err);
    }
  }

  async #acquire(key: string, req: RpcRequest): Promise<Lease> {
    const have = this.#leases.get(key);
    if (have !== undefined) return have;
    const pending = this.#pending.get(key);
    if (pending !== undefined) return pending;
    const a = req.args;
    const p = Lease.acquire(
      { key, containerID: a.containerID, netns: a.netns, ifName: a.ifName, cniArgs: a.args, stdinData: a.stdinData },
      this.#deps,
    );
    this.#pending.set(key, p);
    try {
      const lease = await p;
      this.#leases.set(key, lease);
      this.#startLoop(lease);
      return lease;
    } finally {
      this.#pending.delete(key);
    }
  }

  /** Releases the lease for `key`; unknown keys succeed. */
  async release(key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (pending !== undefined) await pending.catch(() => undefined);
    const lease = this.#leases.get(key);
    if (lease === undefined) {
      this.#deps.store.remove(key);
      return;
    }
    this.#leases.delete(key);
    await lease.release();
  }

  /** Daemon shutdown: stop every loop, release nothing, keep the records. */
  async stopAll(): Promise<void> {
    const all = [...this.#leases.values()];
    this.#leases.clear();
    await Promise.all(all.map((l) => l.stop()));
  }
}

/**
 * Serves the protocol of rpc-protocol.ts on `server` (already created by the caller). Callers
 * other than root and `ownUid` get a refusal (peer-cred.ts) and nothing else.
 */
export function serveConnections(server: Server, manager: LeaseManager, log: (s: string) => void, ownUid: number): void {
  server.on("connection", (conn: Socket) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const answer = (res: RpcResponse): void => {
      if (conn.destroyed) return;
      conn.end(`${JSON.stringify(res)}\n`);
    };
    conn.on("error", () => undefined);
    const refusal = refusePeer(conn, ownUid);
    if (refusal !== undefined) {
      done = true;
      log(refusal);
      answer({ ok: false, error: { code: CNI_ERROR_CODES.Internal, msg: refusal } });
      return;
    }
    conn.on("data", (chunk: Buffer) => {
      if (done) return;
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(0x0a);
      if (nl < 0 && buf.byteLength <= MAX_REQUEST_BYTES) return;
      done = true;
      if (nl < 0 || nl > MAX_REQUEST_BYTES) {
        answer({ ok: false, error: { code: CNI_ERROR_CODES.Internal, msg: `request larger than ${MAX_REQUEST_BYTES} bytes` } });
        return;
      }
      let req: RpcRequest;
      try {
        req = parseRequest(buf.subarray(0, nl).toString("utf8"));
      } catch (err) {
        answer(failure(err));
        return;
      }
      manager.handle(req).then(answer, (err: unknown) => {
        log(`internal error: ${messageOf(err)}`);
        answer(failure(err));
      });
    });
  });
}

export { createServer };
