/**
 * One bridge network attached to a given network namespace through cnitool, with a published port:
 * the way CNI's documentation wires a container it did not create (a Docker container started with
 * `--network=none`, or any netns path), used by the release-tarball and Docker rows. The conflist is
 * bridge + host-local → portmap → firewall; the plugin directory, the per-call log and the names are
 * the caller's. Leftover probes list what an attachment could leave behind on the host.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "../../harness/cleanup.ts";
import { makeTempDir } from "../../harness/tempdir.ts";
import { CNITOOL, run, type Ran } from "./tools.ts";

/** libcni's result cache (the lane mounts a private tmpfs on /var/lib/cni). */
export const CNI_CACHE = "/var/lib/cni/results";

export interface PortNetSpec {
  /** Network name (also the host-local store's directory). */
  name: string;
  bridge: string;
  /** A /24 whose .1 is the gateway. */
  subnet: string;
  hostPort: number;
  /** CNI_PATH for cnitool: the plugin directory under test. */
  binDir: string;
  /** Extra environment for every plugin call (e.g. the per-call log). */
  env?: Record<string, string>;
}

export interface PortNet {
  readonly gateway: string;
  readonly dataDir: string;
  readonly conflist: Record<string, unknown>;
  /** `cnitool <cmd> <name> <netnsPath>`. */
  cnitool(cmd: "add" | "check" | "del", netnsPath: string): Promise<Ran>;
}

/** Writes the conflist to a fresh NETCONFPATH; a cleanup step runs DEL and removes the bridge. */
export function portNet(spec: PortNetSpec, netnsPath: string): PortNet {
  const confDir = makeTempDir("cni-e2e-attach-conf-");
  const dataDir = makeTempDir("cni-e2e-attach-store-");
  const gateway = spec.subnet.replace(/\.0\/24$/, ".1");
  const conflist = {
    cniVersion: "1.0.0",
    name: spec.name,
    plugins: [
      {
        type: "bridge",
        bridge: spec.bridge,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet: spec.subnet, gateway }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
      { type: "portmap", capabilities: { portMappings: true }, snat: true },
      { type: "firewall", backend: "iptables" },
    ],
  };
  writeFileSync(join(confDir, `10-${spec.name}.conflist`), JSON.stringify(conflist, null, 2));
  const env = {
    NETCONFPATH: confDir,
    CNI_PATH: spec.binDir,
    CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: spec.hostPort, containerPort: 80, protocol: "tcp" }] }),
    ...(spec.env ?? {}),
  };
  registerCleanup(`cnitool del ${spec.name}`, () => {
    Bun.spawnSync([CNITOOL, "del", spec.name, netnsPath], { env: { ...process.env, ...env }, stdout: "ignore", stderr: "ignore" });
    Bun.spawnSync(["ip", "link", "del", spec.bridge], { stdout: "ignore", stderr: "ignore" });
  });
  return {
    gateway,
    dataDir,
    conflist,
    cnitool: (cmd, path) => run([CNITOOL, cmd, spec.name, path], { env }),
  };
}

/** GETs http://127.0.0.1:<port>/ until it answers (up to ~4 s); "" when it never does. */
export async function fetchFromHost(port: number): Promise<string> {
  for (let i = 0; i < 20; i++) {
    const body = (await run(["curl", "-s", "--max-time", "2", `http://127.0.0.1:${port}/`])).stdout;
    if (body !== "") return body;
    await Bun.sleep(200);
  }
  return "";
}

/** What is left on the host after DEL: rules naming any needle, veths, cache files, reservations. */
export async function leftovers(net: { name: string; dataDir: string }, needles: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const save of ["iptables-save", "ip6tables-save"]) {
    for (const line of (await run([save])).stdout.split("\n")) {
      if (needles.some((n) => line.includes(n))) found.push(`${save}: ${line}`);
    }
  }
  const links = JSON.parse((await run(["ip", "-j", "-d", "link", "show"])).stdout) as { ifname: string; linkinfo?: { info_kind?: string } }[];
  for (const l of links) if (l.linkinfo?.info_kind === "veth") found.push(`veth ${l.ifname}`);
  if (existsSync(CNI_CACHE)) for (const f of readdirSync(CNI_CACHE)) if (f.startsWith(`${net.name}-`)) found.push(`cache ${f}`);
  const store = join(net.dataDir, net.name);
  if (existsSync(store)) for (const f of readdirSync(store)) if (/^\d/.test(f)) found.push(`reservation ${f}`);
  return found;
}

/** The lines of a per-call log (docs/call-log.md), [] when the file does not exist. */
export function readCallLog(file: string): { plugin: string; command: string; outcome: string; code: number; containerID: string }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}
