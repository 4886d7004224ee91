/**
 * `cni-plugins inspect` and `cni-plugins gc` (docs/operator.md): for each network of a
 * configuration directory, what the node holds, grouped by attachment, whether each attachment is
 * live, and (gc) the spec's GC with the live ones as `cni.dev/valid-attachments`. gc is a dry run
 * unless `--apply` is given; after a real run the node is read again and what stale attachments
 * still hold is reported.
 *
 * Exit status: 0; 1 when a GC call failed or something stale survived it; 2 for a usage error.
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseFlags, USAGE, UsageError, type OperatorFlags } from "./flags.ts";
import { runGc, type GcAttachment, type GcCall } from "./gc-run.ts";
import { judge, systemNamespaceView, type NamespaceView, type Verdict } from "./liveness.ts";
import { loadNetworks, type NetworkList } from "./networks.ts";
import type { Holding } from "../shared/node-state/network-state.ts";
import type { PluginOwnerships } from "../shared/node-state/ownership.ts";
import { readNetworkState, systemReaders, type SourceReaders } from "./sources.ts";

export interface AttachmentReport extends Verdict {
  containerID: string;
  ifName: string;
  holdings: Holding[];
}

export interface NetworkReport {
  name: string;
  file: string;
  plugins: string[];
  attachments: AttachmentReport[];
  problems: string[];
  gc?: {
    applied: boolean;
    validAttachments: GcAttachment[];
    calls?: GcCall[];
    /** After an applied GC: stale attachments that still hold something. */
    remaining?: AttachmentReport[];
  };
}

export interface OperatorReport {
  confDir: string;
  networks: NetworkReport[];
  problems: string[];
}

export interface OperatorEnv {
  readers: SourceReaders;
  /** What each plugin of this build owns beyond a call (the registry's descriptions), by CNI type. */
  owners: PluginOwnerships;
  view: () => NamespaceView;
  gc: typeof runGc;
}

async function inspectNetwork(net: NetworkList, flags: OperatorFlags, env: OperatorEnv, view: NamespaceView): Promise<NetworkReport> {
  const st = await readNetworkState(net, flags.cacheDir, env.readers, env.owners);
  const attachments = [...st.attachments.values()]
    .map((a) => ({ containerID: a.containerID, ifName: a.ifName, holdings: a.holdings, ...judge(a, flags.valid, view) }))
    .sort((x, y) => x.containerID.localeCompare(y.containerID) || x.ifName.localeCompare(y.ifName));
  return { name: net.name, file: net.file, plugins: net.plugins.map((p) => String(p.type)), attachments, problems: st.problems };
}

/** The valid attachments GC gets: every attachment not judged stale, plus the operator's exact pairs. */
export function validAttachments(report: NetworkReport, flags: OperatorFlags): GcAttachment[] {
  const pairs = new Map<string, GcAttachment>();
  const add = (containerID: string, ifname: string) => pairs.set(`${containerID}\n${ifname}`, { containerID, ifname });
  for (const a of report.attachments) if (a.state !== "stale") add(a.containerID, a.ifName);
  for (const v of flags.valid ?? []) if (v.ifName !== undefined) add(v.containerID, v.ifName);
  return [...pairs.values()];
}

/** Runs the command; returns the report and the exit status. */
export async function operate(verb: "inspect" | "gc", flags: OperatorFlags, env: OperatorEnv): Promise<{ report: OperatorReport; status: number }> {
  const loaded = loadNetworks(flags.confDir);
  const problems = [...loaded.problems];
  let networks = loaded.networks;
  if (flags.networks.length > 0) {
    for (const n of flags.networks) if (!networks.some((x) => x.name === n)) problems.push(`network ${JSON.stringify(n)}: not found in ${flags.confDir}`);
    networks = networks.filter((x) => flags.networks.includes(x.name));
  }
  const view = env.view();
  const reports: NetworkReport[] = [];
  let status = 0;
  for (const net of networks) {
    const report = await inspectNetwork(net, flags, env, view);
    if (verb === "gc") {
      const valid = validAttachments(report, flags);
      report.gc = { applied: flags.apply, validAttachments: valid };
      if (flags.apply) {
        report.gc.calls = await env.gc(net, valid, flags.binDirs);
        const stale = new Set(report.attachments.filter((a) => a.state === "stale").map((a) => `${a.containerID}\n${a.ifName}`));
        const after = await inspectNetwork(net, flags, env, view);
        report.gc.remaining = after.attachments.filter((a) => stale.has(`${a.containerID}\n${a.ifName}`) && a.holdings.some((h) => h.kind !== "cache"));
        if (report.gc.calls.some((c) => c.error !== undefined) || report.gc.remaining.length > 0) status = 1;
      }
    }
    reports.push(report);
  }
  return { report: { confDir: flags.confDir, networks: reports, problems }, status };
}

function formatHolding(h: Holding): string {
  return `      ${h.kind.padEnd(10)} ${h.what}\n`;
}

/** The human-readable report. */
export function formatReport(r: OperatorReport): string {
  let out = "";
  for (const p of r.problems) out += `note: ${p}\n`;
  if (r.networks.length === 0) out += `no networks in ${r.confDir}\n`;
  for (const n of r.networks) {
    out += `network ${JSON.stringify(n.name)} (${n.file}): ${n.plugins.join(" → ")}\n`;
    if (n.attachments.length === 0) out += "  nothing held on this node\n";
    for (const a of n.attachments) {
      out += `  ${a.state.padEnd(7)} ${a.containerID || "(no container ID)"}${a.ifName ? `/${a.ifName}` : ""}: ${a.why}\n`;
      for (const h of a.holdings) out += formatHolding(h);
    }
    for (const p of n.problems) out += `  note: ${p}\n`;
    if (n.gc !== undefined) {
      const stale = n.attachments.filter((a) => a.state === "stale").length;
      if (!n.gc.applied) {
        out += `  gc (dry run): would send ${n.gc.validAttachments.length} valid attachment(s) to ${n.plugins.join(", ")}; ${stale} stale attachment(s) would be collected; run with --apply\n`;
      } else {
        for (const c of n.gc.calls ?? []) out += `  gc ${c.plugin}: ${c.error === undefined ? "ok" : `failed: ${c.error}`}\n`;
        const left = n.gc.remaining ?? [];
        out += left.length === 0 ? `  gc: ${stale} stale attachment(s) collected\n` : `  gc: ${left.length} stale attachment(s) still hold something:\n`;
        for (const a of left) {
          out += `    ${a.containerID}${a.ifName ? `/${a.ifName}` : ""}\n`;
          for (const h of a.holdings) out += formatHolding(h);
        }
      }
    }
  }
  return out;
}

/** `cni-plugins inspect|gc ARGS`: parses, runs, prints. `owners`: what the plugins of this build own (the registry's). */
export async function runOperatorCommand(
  verb: "inspect" | "gc",
  argv: readonly string[],
  owners: PluginOwnerships,
  stdout: (t: string) => void,
  stderr: (t: string) => void,
): Promise<number> {
  let flags: OperatorFlags;
  try {
    flags = parseFlags(verb, argv, (p) => readFileSync(p === "-" ? 0 : p, "utf8"), dirname(process.execPath));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message !== "") stderr(`cni-plugins ${verb}: ${err.message}\n`);
    stderr(USAGE);
    return err.message === "" ? 0 : 2;
  }
  const { report, status } = await operate(verb, flags, { readers: systemReaders, owners, view: systemNamespaceView, gc: runGc });
  stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return status;
}
