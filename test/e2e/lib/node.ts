/**
 * A "node" for the differential and interop suites: a throwaway network namespace playing the
 * host (bridges, host veths, iptables, nftables, tc all land there) plus helpers to run a plugin
 * binary inside it exactly as a runtime on that host would (argv[0] = plugin path, CNI_* env,
 * config on stdin). Two nodes give Go and ours identical, fresh, isolated hosts. In an agent lane
 * our shims there are served by the node's own agent (harness/agent.ts nodeAgentSocket).
 */
import { nodeAgentSocket } from "../../harness/agent.ts";
import { createContainerNetns, type ContainerNetns } from "../../harness/netns.ts";
import type { PluginRun } from "../../harness/exec-plugin.ts";
import { join } from "node:path";

export interface Node {
  /** The namespace acting as the host. */
  readonly host: ContainerNetns;
  /** Runs `argv` inside the host namespace and returns its output (never throws). */
  sh(argv: string[], stdin?: string): { status: number | null; stdout: string; stderr: string };
}

export async function createNode(): Promise<Node> {
  const host = await createContainerNetns();
  const sh = (argv: string[], stdin?: string) => {
    const run = Bun.spawnSync(["nsenter", `--net=${host.path}`, "--", ...argv], {
      stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
      stdout: "pipe",
      stderr: "pipe",
    });
    return { status: run.exitCode, stdout: run.stdout.toString(), stderr: run.stderr.toString() };
  };
  sh(["ip", "link", "set", "lo", "up"]);
  return { host, sh };
}

export interface NodeInvocation {
  command: string;
  containerID: string;
  netns: string;
  ifName: string;
  args?: string;
  config: string;
  /** CNI_PATH: where delegated plugins (IPAM) are looked up. */
  binDir: string;
}

/** Runs `<binDir>/<type>` inside the node's host namespace. */
export async function runOnNode(node: Node, type: string, inv: NodeInvocation): Promise<PluginRun> {
  const exe = join(inv.binDir, type);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    CNI_COMMAND: inv.command,
    CNI_CONTAINERID: inv.containerID,
    CNI_NETNS: inv.netns,
    CNI_IFNAME: inv.ifName,
    CNI_PATH: inv.binDir,
  };
  if (inv.args !== undefined) env.CNI_ARGS = inv.args;
  const socket = await nodeAgentSocket(node.host.path, exe);
  if (socket !== undefined) env.CNI_PLUGINS_SOCKET = socket;
  const started = performance.now();
  const proc = Bun.spawn(["nsenter", `--net=${node.host.path}`, "--", exe], {
    env,
    stdin: new TextEncoder().encode(inv.config),
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  let json: unknown;
  try {
    json = stdout.trim() === "" ? undefined : JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return {
    status: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
    stdout,
    stderr,
    json,
    ms: performance.now() - started,
  };
}

/**
 * Makes a node fresh again for the next row that reuses it (the arm64 lane's rows share a node, so
 * its agent starts once): every link but `lo` deleted, every iptables and ip6tables table flushed
 * and its chains removed, the nftables ruleset flushed. Sysctls keep what earlier rows set; a
 * suite that compares two nodes runs the same rows on both, so they differ alike.
 */
export function resetNode(node: Node): void {
  for (const line of node.sh(["ip", "-o", "link", "show"]).stdout.split("\n")) {
    const name = /^\d+: ([^:@]+)[@:]/.exec(line)?.[1];
    if (name !== undefined && name !== "lo") node.sh(["ip", "link", "del", name]);
  }
  for (const tool of ["iptables", "ip6tables"]) {
    for (const table of ["filter", "nat", "mangle", "raw"]) {
      node.sh([tool, "-w", "-t", table, "-F"]);
      node.sh([tool, "-w", "-t", table, "-X"]);
    }
  }
  node.sh(["nft", "flush", "ruleset"]);
}
