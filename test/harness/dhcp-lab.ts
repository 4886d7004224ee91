/**
 * A DHCP lab for the dhcp integration tests, built inside the test's throwaway "host" netns:
 *
 *   server netns: dnsmasq on dhsrv0 (10.77.0.1/24, pool .100-.199)
 *        | veth dhsrvh <-> bridge dhbr0 (host) <-> veth dhc<N> / eth0 in each container netns
 *   host: <bin>/dhcp daemon -socketpath <tmp>/run/dhcp.sock -leasedir <tmp>/leases
 *
 * Every process started here (dnsmasq, daemons, netns holders) is killed by PID through the
 * fixture cleanup registry (cleanup.ts), even when a test fails; a test file using the lab runs
 * `runAllCleanups` in afterAll (not per test: the lab outlives single tests).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { registerCleanup } from "./cleanup.ts";
import { createContainerNetns, type ContainerNetns } from "./netns.ts";
import { goPluginPath, pluginPath } from "./paths.ts";
import { makeTempDir } from "./tempdir.ts";
import type { FakeServerEvent, FakeServerOptions } from "./dhcp-fake-server.ts";

export const LAB_BRIDGE = "dhbr0";
export const SERVER_IP = "10.77.0.1";
export const SERVER_IP6 = "fd00:77::1";

export function sh(cmd: string[]): string {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString();
}

export interface DnsmasqOptions {
  /** Pool (default 10.77.0.100-10.77.0.199). */
  range?: [string, string];
  /** Lease time (default "2m", dnsmasq's minimum). */
  leaseTime?: string;
  /** Extra --dhcp-option values (e.g. "option:T1,5", "option:classless-static-route,…"). */
  options?: string[];
  /** false: build the bridge and server netns only (for {@link startFakeServer}); default true. */
  dnsmasq?: boolean;
  /** Also serve DHCPv6 (stateful, no RAs) from this pool in {@link SERVER_IP6}/64, lease 2m. */
  range6?: [string, string];
}

export interface Lab {
  dir: string;
  server: ContainerNetns;
  leaseFile: string;
  logFile: string;
  /** Lines of dnsmasq's lease file: `<expiry> <mac> <ip> <host> <client-id>`. */
  leases(): string[][];
  dnsmasqLog(): string;
  stop(): Promise<void>;
}

/** Creates the bridge, the server netns and starts dnsmasq. */
export async function startLab(o: DnsmasqOptions = {}): Promise<Lab> {
  const dir = makeTempDir("cni-dhcp-lab-");
  const server = await createContainerNetns();
  sh(["ip", "link", "add", LAB_BRIDGE, "address", "02:00:00:77:00:01", "type", "bridge"]);
  registerCleanup(`bridge ${LAB_BRIDGE}`, () => void Bun.spawnSync(["ip", "link", "del", LAB_BRIDGE]));
  sh(["ip", "link", "set", LAB_BRIDGE, "up"]);
  sh(["ip", "link", "add", "dhsrvh", "type", "veth", "peer", "name", "dhsrv0", "netns", String(server.pid)]);
  sh(["ip", "link", "set", "dhsrvh", "master", LAB_BRIDGE, "up"]);
  const inSrv = (...a: string[]): string => sh(["nsenter", `--net=${server.path}`, ...a]);
  inSrv("ip", "link", "set", "lo", "up");
  inSrv("ip", "addr", "add", `${SERVER_IP}/24`, "dev", "dhsrv0");
  if (o.range6 !== undefined) {
    inSrv("sysctl", "-qw", "net.ipv6.conf.dhsrv0.disable_ipv6=0");
    inSrv("ip", "addr", "add", `${SERVER_IP6}/64`, "dev", "dhsrv0", "nodad");
  }
  inSrv("ip", "link", "set", "dhsrv0", "up");
  const leaseFile = join(dir, "dnsmasq.leases");
  const logFile = join(dir, "dnsmasq.log");
  const teardown = async (): Promise<void> => {
    Bun.spawnSync(["ip", "link", "del", "dhsrvh"]); // netns teardown is asynchronous: delete it now
    Bun.spawnSync(["ip", "link", "del", LAB_BRIDGE]);
    await server.destroy();
  };
  if (o.dnsmasq === false) {
    return { dir, server, leaseFile, logFile, leases: () => [], dnsmasqLog: () => "", stop: teardown };
  }
  const [lo, hi] = o.range ?? ["10.77.0.100", "10.77.0.199"];
  const args = [
    "nsenter", `--net=${server.path}`, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0",
    "--interface=dhsrv0", "--bind-interfaces", `--dhcp-range=${lo},${hi},255.255.255.0,${o.leaseTime ?? "2m"}`,
    `--dhcp-option=option:router,${SERVER_IP}`, `--dhcp-leasefile=${leaseFile}`, "--dhcp-authoritative", "--no-ping",
    "--log-dhcp", `--log-facility=${logFile}`, `--pid-file=${join(dir, "dnsmasq.pid")}`,
    ...(o.range6 !== undefined ? [`--dhcp-range=${o.range6[0]},${o.range6[1]},64,2m`] : []),
    ...(o.options ?? []).map((x) => `--dhcp-option=${x}`),
  ];
  const proc = Bun.spawn(args, { stdout: "ignore", stderr: "pipe" });
  const kill = (): void => {
    proc.kill("SIGKILL");
  };
  const forget = registerCleanup(`dnsmasq pid ${proc.pid}`, kill);
  for (let i = 0; i < 100 && !existsSync(logFile); i++) await Bun.sleep(20);
  if (proc.exitCode !== null) throw new Error(`dnsmasq exited: ${await new Response(proc.stderr).text()}`);
  return {
    dir,
    server,
    leaseFile,
    logFile,
    leases: () => (existsSync(leaseFile) ? readFileSync(leaseFile, "utf8").split("\n").filter((l) => l !== "").map((l) => l.split(" ")) : []),
    dnsmasqLog: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
    stop: async () => {
      kill();
      await proc.exited;
      forget();
      await teardown();
    },
  };
}

let containerSeq = 0;

export interface LabContainer {
  netns: ContainerNetns;
  hostVeth: string;
  exec(...a: string[]): string;
}

/** A container netns with `eth0` (veth) plugged into the lab bridge, both ends up, no address. */
export async function labContainer(ifName = "eth0"): Promise<LabContainer> {
  const netns = await createContainerNetns();
  const hostVeth = `dhc${++containerSeq}`;
  sh(["ip", "link", "add", hostVeth, "type", "veth", "peer", "name", ifName, "netns", String(netns.pid)]);
  sh(["ip", "link", "set", hostVeth, "master", LAB_BRIDGE, "up"]);
  const exec = (...a: string[]): string => sh(["nsenter", `--net=${netns.path}`, ...a]);
  exec("ip", "link", "set", "lo", "up");
  // IPv6 on, whatever a new netns inherits: DHCPv6 needs the link-local address.
  exec("sysctl", "-qw", `net.ipv6.conf.${ifName}.disable_ipv6=0`);
  return { netns, hostVeth, exec };
}

export interface Daemon {
  proc: Subprocess<"ignore", "ignore", "pipe">;
  socketPath: string;
  leaseDir: string;
  /** Everything the daemon wrote to stderr so far (drained in the background). */
  log(): string;
  signal(sig: "SIGTERM" | "SIGKILL" | "SIGINT"): Promise<number | null>;
}

/**
 * Starts `<bin>/dhcp daemon` with a private socket and lease dir; waits for the socket. `go`: the
 * Go 1.1.1 daemon (/usr/lib/cni/dhcp) instead, which keeps no lease dir.
 */
export async function startDaemon(dir: string, extra: string[] = [], env: Record<string, string> = {}, go = false): Promise<Daemon> {
  const socketPath = join(dir, "run", "dhcp.sock");
  const leaseDir = join(dir, "leases");
  mkdirSync(dir, { recursive: true });
  const argv = go
    ? [goPluginPath("dhcp"), "daemon", "-socketpath", socketPath, ...extra]
    : [pluginPath("dhcp"), "daemon", "-socketpath", socketPath, "-leasedir", leaseDir, ...extra];
  const proc = Bun.spawn(argv, {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  const forget = registerCleanup(`dhcp daemon pid ${proc.pid}`, () => proc.kill("SIGKILL"));
  let text = "";
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) text += dec.decode(chunk);
  })();
  // Ours logs "listening on" once the socket has its final mode (a test may loosen it afterwards).
  const up = (): boolean => existsSync(socketPath) && (go || text.includes("listening on"));
  for (let i = 0; i < 250 && !up() && proc.exitCode === null; i++) await Bun.sleep(20);
  if (!up()) {
    proc.kill("SIGKILL");
    await proc.exited;
    forget();
    throw new Error(`dhcp daemon did not create ${socketPath}: ${text}`);
  }
  return {
    proc,
    socketPath,
    leaseDir,
    log: () => text,
    signal: async (sig) => {
      proc.kill(sig);
      const code = await proc.exited;
      forget();
      return code;
    },
  };
}

/** A network config with `ipam.type` dhcp for a direct IPAM invocation. */
export function dhcpConf(socketPath: string, ipam: Record<string, unknown> = {}, name = "dhcpnet", cniVersion = "1.0.0"): Record<string, unknown> {
  return { cniVersion, name, type: "bridge", ipam: { type: "dhcp", daemonSocketPath: socketPath, ...ipam } };
}

export interface FakeServer {
  /** Every message the server received so far (see dhcp-fake-server.ts). */
  events(): FakeServerEvent[];
  stop(): Promise<void>;
}

/** Starts test/harness/dhcp-fake-server.ts inside the lab's server netns; waits until it listens. */
export async function startFakeServer(lab: Lab, o: Omit<FakeServerOptions, "serverIp" | "netmask">): Promise<FakeServer> {
  const opts: FakeServerOptions = { serverIp: SERVER_IP, netmask: "255.255.255.0", ...o };
  const script = join(import.meta.dir, "dhcp-fake-server.ts");
  const proc = Bun.spawn(["nsenter", `--net=${lab.server.path}`, process.execPath, script, JSON.stringify(opts)], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const forget = registerCleanup(`fake dhcp server pid ${proc.pid}`, () => proc.kill("SIGKILL"));
  const events: FakeServerEvent[] = [];
  let ready = false;
  void (async () => {
    const dec = new TextDecoder();
    let pending = "";
    for await (const chunk of proc.stdout) {
      pending += dec.decode(chunk);
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const v = JSON.parse(line) as FakeServerEvent | { ready: true };
        if ("ready" in v) ready = true;
        else events.push(v);
      }
    }
  })();
  for (let i = 0; i < 250 && !ready && proc.exitCode === null; i++) await Bun.sleep(20);
  if (!ready) {
    proc.kill("SIGKILL");
    await proc.exited;
    forget();
    throw new Error(`fake DHCP server did not start: ${await new Response(proc.stderr).text()}`);
  }
  return {
    events: () => [...events],
    stop: async () => {
      proc.kill("SIGKILL");
      await proc.exited;
      forget();
    },
  };
}
