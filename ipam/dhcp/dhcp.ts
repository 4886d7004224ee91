/**
 * dhcp: an IPAM plugin that gets leases from a DHCP server through a long-running daemon
 * (upstream plugins/ipam/dhcp). The same executable runs the daemon as `dhcp daemon [flags]`
 * (daemon/main.ts).
 *
 * Plugin side: ADD, CHECK, DEL and GC are calls to the daemon over the unix socket
 * (`ipam.daemonSocketPath`, default /run/cni/dhcp.sock) in upstream's protocol, Go net/rpc over
 * HTTP with gob (rpc-protocol.ts), so this plugin works with the Go daemon and the Go plugin with
 * ours. CNI_NETNS is made absolute first. Config errors are reported (code 7) before the daemon is
 * contacted.
 * - ADD: DHCP.Allocate. The result must hold the families of `ipam.ipFamilies`; a daemon that
 *   ignores them (Go's) has its lease released again and ADD fails.
 * - CHECK: DHCP.Check (read-only, ours); a Go daemon lacks it, so it gets DHCP.Allocate as
 *   upstream's CHECK does.
 * - DEL: DHCP.Release; a daemon that cannot be reached is noted on stderr and DEL succeeds.
 * - GC: DHCP.GC (ours) with the config's `cni.dev/valid-attachments`; a Go daemon lacks it (noted,
 *   success); a daemon that cannot be reached is code 11.
 * - STATUS: the daemon accepts a connection and completes the RPC handshake — the first thing ADD
 *   needs; otherwise code 50. Nothing is sent to the DHCP server.
 * Deliberate differences from upstream are listed in DIFFERENCES.md (dhcp).
 */
import { InternalError, PluginUnavailableLimitedError, TryAgainLaterError, messageOf } from "../../shared/cni/errors.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { absolutePath } from "../../shared/sys/file.ts";
import { loadDhcpConfig, socketPathOf } from "./config.ts";
import { DaemonCallError, DaemonUnreachableError, withDaemon, type RpcClient } from "./rpc-client.ts";
import {
  CmdArgsType,
  METHOD_ALLOCATE,
  METHOD_CHECK,
  METHOD_GC,
  METHOD_RELEASE,
  argsToGob,
  cannotFindMethod,
  resultFromGob,
  type RpcArgs,
} from "./rpc-protocol.ts";

const START_HINT = "is the dhcp daemon running? start it with `dhcp daemon` (or the cni-dhcp.socket unit)";

function rpcArgs(args: CmdArgs): RpcArgs {
  return {
    containerID: args.containerID,
    // The daemon has another working directory: a relative path is made absolute here, as upstream.
    netns: args.netns === "" || args.netns.startsWith("/") ? args.netns : absolutePath(args.netns),
    ifName: args.ifName,
    args: args.args,
    path: args.path,
    stdinData: Buffer.from(args.stdinData).toString("utf8"),
  };
}

/** One call; the daemon's own error becomes upstream's `error calling <method>: …` (code 999). */
async function call(client: RpcClient, method: string, args: CmdArgs): Promise<unknown> {
  try {
    return await client.call(method, CmdArgsType, argsToGob(rpcArgs(args)));
  } catch (err) {
    throw new InternalError(`error calling ${method}: ${messageOf(err)}`, { cause: err });
  }
}

/** Calls one of our methods; when the daemon (a Go one) lacks it, runs `fallback` instead. */
async function callOurs(client: RpcClient, method: string, args: CmdArgs, fallback: () => Promise<unknown>): Promise<unknown> {
  try {
    return await call(client, method, args);
  } catch (err) {
    const lacks = err instanceof InternalError && err.cause instanceof DaemonCallError && err.cause.message === cannotFindMethod(method);
    if (!lacks) throw err;
    return fallback();
  }
}

function unreachable(err: DaemonUnreachableError): TryAgainLaterError {
  return new TryAgainLaterError(`error dialing DHCP daemon: ${err.message}`, { cause: err, details: START_HINT });
}

/** The address families of a result's ips. */
function familiesOf(r: Result): (4 | 6)[] {
  return [...new Set((r.ips ?? []).map((ip): 4 | 6 => (ip.address.includes(":") ? 6 : 4)))].sort();
}

const familyNames = (fs: readonly (4 | 6)[]): string => fs.map((f) => `IPv${f}`).join(" + ") || "no address";

/**
 * DHCP.Allocate. The result must hold exactly the configured families: a Go daemon ignores
 * `ipam.ipFamilies` (it leases IPv4 only), so its lease is released again and ADD fails.
 */
async function add(args: CmdArgs): Promise<Result> {
  const want = loadDhcpConfig(args).families;
  try {
    return await withDaemon(socketPathOf(args.config), args.scope, async (c) => {
      const result = resultFromGob(await call(c, METHOD_ALLOCATE, args));
      // The daemon reports the container interface only with applyMtu; every address is on it.
      // (gob cannot carry the index itself: a pointer to 0 is not transmitted.)
      if (result.interfaces?.length === 1) for (const ip of result.ips ?? []) ip.interface = 0;
      const got = familiesOf(result);
      if (got.join() === want.join()) return result;
      await call(c, METHOD_RELEASE, args).catch(() => undefined);
      throw new InternalError(
        `the DHCP daemon leased ${familyNames(got)} where ipam.ipFamilies asks for ${familyNames(want)}: it does not implement ipFamilies (the Go daemon leases IPv4 only); lease released`,
      );
    });
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

/** Read-only DHCP.Check; a Go daemon lacks it, so it gets upstream's CHECK (DHCP.Allocate). */
async function check(args: CmdArgs): Promise<void> {
  loadDhcpConfig(args);
  try {
    await withDaemon(socketPathOf(args.config), args.scope, (c) => callOurs(c, METHOD_CHECK, args, () => call(c, METHOD_ALLOCATE, args)));
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

async function del(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), args.scope, (c) => call(c, METHOD_RELEASE, args));
  } catch (err) {
    if (!(err instanceof DaemonUnreachableError)) throw err;
    args.stderr(`dhcp: DEL: the DHCP daemon is not reachable (${err.message}); nothing released, the lease will expire at the server\n`);
  }
}

/** DHCP.GC; a Go daemon has no GC, which is said on stderr (nothing collected, success). */
async function gc(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), args.scope, (c) =>
      callOurs(c, METHOD_GC, args, async () => {
        args.stderr("dhcp: GC: the DHCP daemon does not implement DHCP.GC (a Go daemon); nothing collected\n");
      }),
    );
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

/**
 * STATUS: available when the daemon accepts a Go RPC connection (the first thing ADD needs). When it
 * does not, code 51, not 50 (SPEC.md "STATUS"): the daemon is also what renews the leases of the
 * existing containers, which lose their addresses when those expire.
 */
async function status(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), args.scope, async () => undefined);
  } catch (err) {
    if (!(err instanceof DaemonUnreachableError)) throw err;
    throw new PluginUnavailableLimitedError(`DHCP daemon not reachable (existing leases are not renewed): ${err.message}`, { cause: err, details: START_HINT });
  }
}

export const dhcpPlugin: PluginSpec = { name: "dhcp", versions: ALL_VERSIONS, add, check, del, status, gc };
