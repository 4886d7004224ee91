/**
 * A DHCP setup on a diff {@link Node} for the `macvlan + dhcp` row: a veth pair `<master>` /
 * `<master>p` in the node's host namespace, dnsmasq on `<master>p` handing out exactly ONE address
 * (so Go's side and ours get the same lease), and the dhcp daemon of the side under test
 * (`<binDir>/dhcp daemon -socketpath …`) running in the node. Both processes are killed by PID
 * through the fixture cleanup (cleanup.ts) after the test, even when it fails.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "../../harness/cleanup.ts";
import { GO_BIN_DIR } from "../../harness/paths.ts";
import { makeTempDir } from "../../harness/tempdir.ts";
import type { Node } from "./node.ts";

export interface DhcpNodeOptions {
  /** The macvlan master to create (its peer `<master>p` carries the server). */
  master: string;
  /** Server address with prefix, e.g. 10.80.13.1/24; it is also the router option. */
  server: string;
  /** The one address the server hands out. */
  lease: string;
}

function mustSh(node: Node, argv: string[]): void {
  const r = node.sh(argv);
  if (r.status !== 0) throw new Error(`${argv.join(" ")} failed: ${r.stderr.trim()}`);
}

/** Spawns `argv` inside the node's host namespace; killed (SIGKILL) by the fixture cleanup. */
function daemonInNode(node: Node, label: string, argv: string[]): { exited: () => boolean; stderr: () => string } {
  const proc = Bun.spawn(["nsenter", `--net=${node.host.path}`, "--", ...argv], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  registerCleanup(`${label} pid ${proc.pid}`, () => proc.kill("SIGKILL"));
  let text = "";
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) text += dec.decode(chunk);
  })();
  return { exited: () => proc.exitCode !== null, stderr: () => text };
}

async function waitFor(what: string, cond: () => boolean, failed: () => string | undefined): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    const f = failed();
    if (f !== undefined) throw new Error(`${what}: ${f}`);
    await Bun.sleep(20);
  }
  throw new Error(`${what}: timed out`);
}

/** Sets the server side up on `node` and starts `<binDir>/dhcp daemon`; returns its socket path. */
export async function startDhcpOnNode(node: Node, binDir: string, o: DhcpNodeOptions): Promise<{ socket: string }> {
  const dir = makeTempDir("cni-diff-dhcp-");
  const peer = `${o.master}p`;
  mustSh(node, ["ip", "link", "add", o.master, "type", "veth", "peer", "name", peer]);
  mustSh(node, ["ip", "addr", "add", o.server, "dev", peer]);
  mustSh(node, ["ip", "link", "set", o.master, "up"]);
  mustSh(node, ["ip", "link", "set", peer, "up"]);
  const serverIp = o.server.split("/")[0]!;
  const logFile = join(dir, "dnsmasq.log");
  const dnsmasq = daemonInNode(node, "dnsmasq", [
    "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0", `--interface=${peer}`, "--bind-interfaces",
    `--dhcp-range=${o.lease},${o.lease},255.255.255.0,2m`, `--dhcp-option=option:router,${serverIp}`,
    `--dhcp-leasefile=${join(dir, "dnsmasq.leases")}`, "--dhcp-authoritative", "--no-ping",
    "--log-dhcp", `--log-facility=${logFile}`, `--pid-file=${join(dir, "dnsmasq.pid")}`,
  ]);
  await waitFor("dnsmasq", () => existsSync(logFile), () => (dnsmasq.exited() ? `exited: ${dnsmasq.stderr()}` : undefined));
  const socket = join(dir, "dhcp.sock");
  // Only our daemon knows -leasedir (Go 1.1.1 keeps leases in memory).
  const leaseDir = binDir === GO_BIN_DIR ? [] : ["-leasedir", join(dir, "leases")];
  const daemon = daemonInNode(node, "dhcp daemon", [join(binDir, "dhcp"), "daemon", "-socketpath", socket, ...leaseDir]);
  await waitFor(`${binDir}/dhcp daemon`, () => existsSync(socket), () => (daemon.exited() ? `exited: ${daemon.stderr()}` : undefined));
  return { socket };
}
