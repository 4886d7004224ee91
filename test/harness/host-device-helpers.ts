/**
 * host-device test helpers: veth "host devices" in the test's (throwaway) host netns with cleanup,
 * iproute2 views of a link (`ip -j -d link show`, which prints `ifalias`), and the config builder.
 */
import { registerCleanup } from "./cleanup.ts";
import { ipJson, type IpLink } from "./ip-oracle.ts";

let seq = 0;

/** A unique short link name (≤ 15 bytes) for this process. */
export function uniqueName(prefix: string): string {
  seq++;
  return `${prefix}${(process.pid % 1000).toString(36)}${seq.toString(36)}`.slice(0, 15);
}

function ip(...args: string[]): void {
  const r = Bun.spawnSync(["ip", ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.toString().trim()}`);
}

/** Runs `ip ...` and ignores failures (cleanup). */
export function ipQuiet(...args: string[]): void {
  Bun.spawnSync(["ip", ...args], { stdout: "ignore", stderr: "ignore" });
}

/** Runs `ip ...`, throwing with ip's stderr on failure. */
export const ipCmd = ip;

/**
 * Creates a veth pair `name` / `<name>p` in the host netns (UP unless `down`), removed at fixture
 * cleanup wherever the `name` end ended up in the host (a container netns dies with its holder).
 */
export function hostVeth(name: string, o: { down?: boolean; mac?: string } = {}): { name: string; peer: string } {
  const peer = `${name}p`.slice(0, 15);
  ip("link", "add", name, ...(o.mac ? ["address", o.mac] : []), "type", "veth", "peer", "name", peer);
  registerCleanup(`veth ${name}`, () => {
    ipQuiet("link", "del", name);
    ipQuiet("link", "del", peer);
  });
  if (!o.down) ip("link", "set", name, "up");
  return { name, peer };
}

/** `ip -j -d link show dev NAME` in `netns` (host when undefined), or undefined when absent. */
export function linkDetails(netns: string | undefined, name: string): IpLink | undefined {
  try {
    return ipJson<IpLink[]>(netns, "-d", "link", "show", "dev", name)[0];
  } catch {
    return undefined;
  }
}

export interface HostDeviceConfOptions {
  cniVersion: string;
  name?: string;
  /** Selector and other top-level keys (device, hwaddr, allowUnsafeDevice, runtimeConfig, ...). */
  top: Record<string, unknown>;
  /** host-local IPAM with this dataDir and subnet. */
  ipam?: { dataDir: string; subnet: string; routes?: Record<string, unknown>[] };
}

export function hostDeviceConf(o: HostDeviceConfOptions): Record<string, unknown> {
  const conf: Record<string, unknown> = { cniVersion: o.cniVersion, name: o.name ?? "hostdev-net", type: "host-device", ...o.top };
  if (o.ipam) {
    conf.ipam = {
      type: "host-local",
      dataDir: o.ipam.dataDir,
      ranges: [[{ subnet: o.ipam.subnet }]],
      ...(o.ipam.routes ? { routes: o.ipam.routes } : {}),
    };
  }
  return conf;
}
