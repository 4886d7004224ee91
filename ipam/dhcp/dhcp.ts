/**
 * dhcp: an IPAM plugin that gets IPv4 leases from a DHCP server through a long-running daemon
 * (upstream plugins/ipam/dhcp, upstream-matrix §2.10 and §4). The same executable runs the daemon
 * as `dhcp daemon [flags]` (daemon/main.ts).
 *
 * Plugin side: ADD, CHECK and DEL are forwarded to the daemon over a unix socket
 * (`ipam.daemonSocketPath`, default /run/cni/dhcp.sock) with our JSON protocol (rpc-protocol.ts).
 * CNI_NETNS is made absolute first. STATUS and GC do nothing.
 *
 * Deliberate differences from the Go plugin (1.1.1 / HEAD):
 * - Protocol: JSON lines over the unix socket instead of Go net/rpc + gob; a Go daemon and this
 *   plugin (or the reverse) cannot talk to each other. Stop the Go daemon before upgrading.
 * - Daemon down: ADD fails with code 11 ("try again later") instead of 999; DEL succeeds and prints
 *   a note on stderr instead of failing (pod deletion is never blocked by a dead daemon, P23).
 * - CHECK is read-only: it asks the daemon whether it holds a lease for the container; no DHCP
 *   packet is sent (upstream re-runs DHCP.Allocate).
 * - Config errors (unknown option names, values over 255 bytes) are reported by the plugin with
 *   code 7 before contacting the daemon; the texts are upstream's. A config without `ipam` uses the
 *   default socket (upstream panics).
 * - The client uses a UDP socket bound to the container interface and sets the BOOTP broadcast
 *   flag while it has no address (upstream HEAD uses a raw AF_PACKET socket and never sets it).
 * - DHCPRELEASE is sent from the leased address with IP_TRANSPARENT (so it reaches the server even
 *   when the main plugin has not configured, or already removed, the address).
 * - Leases are persisted (daemon `-leasedir`, default /var/lib/cni/dhcp) and resumed after a daemon
 *   restart; a stale socket file is replaced; SIGTERM persists and releases nothing.
 * - Option 33 destinations of class D/E get /32 (Go yields a nil mask).
 * - Rebinding (after T2) sends a broadcast REQUEST for the current address (RFC 2131 §4.4.5), then
 *   falls back to DISCOVER; upstream always restarts with DISCOVER.
 * - Every renew/rebind exchange is cut at the end of its phase, so the link goes down at expiry
 *   (upstream can overrun it by a whole retry sequence).
 * - A renewal or rebind answered with ANOTHER address is refused and that lease released; the held
 *   address is kept until it expires (upstream silently switches the daemon's lease while the
 *   container keeps the old address).
 * - A persisted lease found expired at daemon start is re-acquired (INIT-REBOOT for the same
 *   address, then DISCOVER with it as a hint, for one -resendtimeout) before the link is set down.
 * - The daemon answers only callers with uid 0 or its own uid (SO_PEERCRED); upstream relies on the
 *   socket's file mode alone.
 * - A new lease waits (≤ 2 s) for a link it just set up to become operational before the first
 *   DISCOVER, instead of losing it to a full -timeout.
 */
import { isAbsolute, resolve } from "node:path";
import { InternalError, PluginUnavailableError, TryAgainLaterError, messageOf } from "../../shared/cni/errors.ts";
import { writeAllSync } from "../../shared/cni/stdio.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
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
    netns: args.netns === "" || isAbsolute(args.netns) ? args.netns : resolve(args.netns),
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

/** True when a Go daemon answered that it lacks one of our methods. */
function lacksMethod(err: unknown, method: string): boolean {
  return err instanceof InternalError && err.cause instanceof DaemonCallError && err.cause.message === cannotFindMethod(method);
}

function unreachable(err: DaemonUnreachableError): TryAgainLaterError {
  return new TryAgainLaterError(`error dialing DHCP daemon: ${err.message}`, { cause: err, details: START_HINT });
}

async function add(args: CmdArgs): Promise<Result> {
  loadDhcpConfig(args.config, args.args);
  try {
    return await withDaemon(socketPathOf(args.config), async (c) => resultFromGob(await call(c, METHOD_ALLOCATE, args)));
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

/** Read-only DHCP.Check; a Go daemon lacks it, so it gets upstream's CHECK (DHCP.Allocate). */
async function check(args: CmdArgs): Promise<void> {
  loadDhcpConfig(args.config, args.args);
  try {
    await withDaemon(socketPathOf(args.config), async (c) => {
      try {
        await call(c, METHOD_CHECK, args);
      } catch (err) {
        if (!lacksMethod(err, METHOD_CHECK)) throw err;
        await call(c, METHOD_ALLOCATE, args);
      }
    });
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

async function del(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), (c) => call(c, METHOD_RELEASE, args));
  } catch (err) {
    if (!(err instanceof DaemonUnreachableError)) throw err;
    writeAllSync(2, `dhcp: DEL: the DHCP daemon is not reachable (${err.message}); nothing released, the lease will expire at the server\n`);
  }
}

/** DHCP.GC; a Go daemon has no GC, which is said on stderr (nothing collected, success). */
async function gc(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), async (c) => {
      try {
        await call(c, METHOD_GC, args);
      } catch (err) {
        if (!lacksMethod(err, METHOD_GC)) throw err;
        writeAllSync(2, "dhcp: GC: the DHCP daemon does not implement DHCP.GC (a Go daemon); nothing collected\n");
      }
    });
  } catch (err) {
    throw err instanceof DaemonUnreachableError ? unreachable(err) : err;
  }
}

/** STATUS: available when the daemon accepts a Go RPC connection (the first thing ADD needs). */
async function status(args: CmdArgs): Promise<void> {
  try {
    await withDaemon(socketPathOf(args.config), async () => undefined);
  } catch (err) {
    if (!(err instanceof DaemonUnreachableError)) throw err;
    throw new PluginUnavailableError(`DHCP daemon not reachable: ${err.message}`, { cause: err, details: START_HINT });
  }
}

export const dhcpPlugin: PluginSpec = {
  name: "dhcp",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
  gc,
};
