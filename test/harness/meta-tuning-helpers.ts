/**
 * Helpers for the tuning/sbr integration tests: a ptp + host-local (+ meta plugins) conflist, and
 * oracles that read the container's state with `ip -j` and `cat /proc/sys/...` through nsenter.
 */
import { ipJson } from "./ip-oracle.ts";
import type { NetworkConfigList } from "./conflist.ts";

/** A conflist: ptp (+ host-local on `subnets`) followed by `meta` plugins. */
export function ptpChain(o: {
  name: string;
  cniVersion: string;
  dataDir: string;
  subnets?: string[];
  meta: Record<string, unknown>[];
}): NetworkConfigList {
  const subnets = o.subnets ?? ["10.71.0.0/24"];
  return {
    name: o.name,
    cniVersion: o.cniVersion,
    plugins: [
      {
        type: "ptp",
        ipam: {
          type: "host-local",
          dataDir: o.dataDir,
          ranges: subnets.map((subnet) => [{ subnet }]),
          routes: subnets.map((s) => ({ dst: s.includes(":") ? "::/0" : "0.0.0.0/0" })),
        },
      },
      ...o.meta,
    ],
  };
}

/** `ip -j -d link show dev <name>` in the netns. */
export function linkState(netns: string, name: string): { mtu: number; address: string; txqlen: number; flags: string[]; promiscuity: number } {
  const [l] = ipJson<Record<string, any>[]>(netns, "-d", "link", "show", "dev", name);
  if (l === undefined) throw new Error(`no link ${name} in ${netns}`);
  return { mtu: l.mtu, address: l.address, txqlen: l.txqlen, flags: l.flags ?? [], promiscuity: l.promiscuity };
}

/** The value of a /proc/sys file as seen inside the netns (trailing newline removed). */
export function sysctlIn(netns: string, path: string): string {
  const r = Bun.spawnSync(["nsenter", `--net=${netns}`, "--", "cat", path], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`cat ${path} in ${netns}: ${r.stderr.toString()}`);
  return r.stdout.toString().replace(/\n$/, "");
}

/** Writes a /proc/sys file inside the netns. */
export function setSysctlIn(netns: string, path: string, value: string): void {
  const r = Bun.spawnSync(["nsenter", `--net=${netns}`, "--", "sh", "-c", `printf %s "$1" > "$2"`, "sh", value, path], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`write ${path} in ${netns}: ${r.stderr.toString()}`);
}

/** Runs `ip <args>` in the netns; throws on failure. */
export function ipIn(netns: string, ...args: string[]): void {
  const r = Bun.spawnSync(["nsenter", `--net=${netns}`, "--", "ip", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.toString()}`);
}
