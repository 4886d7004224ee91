/**
 * DEL with a degenerate prevResult (SPEC.md "DEL" on the spec's main branch, cni#1156: "Plugins
 * should still return without error if `prevResult` is empty for a `DEL` command"), for every plugin
 * of ours in a real chain: each row is ADDed on a fresh node + container namespace, then DELeted
 * (twice) through the whole chain with the prevResult every plugin gets replaced by one of
 * {@link DEL_PREV_VARIANTS}. Every DEL must succeed, and what is left afterwards — the kernel and
 * firewall state of both namespaces (snapshot.ts) and the files the plugins keep for the attachment
 * — must equal what the same chain leaves after an ordinary DEL with the ADD result.
 * Shared by the host lane (test/integration/del-prevresult.test.ts) and the VM lane
 * (test/integration/del-prevresult.vm.test.ts, rows that need ipvlan, 8021q, vrf or dummy).
 */
import { expect } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createContainerNetns } from "../../harness/netns.ts";
import { makeTempDir } from "../../harness/tempdir.ts";
import { DIFF_CASES, VM_KERNEL_FEATURES, type DiffCase } from "../diff-cases.ts";
import { describeOutcome, runChain, type ChainOutcome } from "./chain.ts";
import { diffState, type Difference } from "./compare.ts";
import { createNode } from "./node.ts";
import { OUR_BIN } from "./plugins.ts";
import { snapshot } from "./snapshot.ts";

/** What a runtime may hand every plugin of the chain on DEL instead of the ADD result. */
export const DEL_PREV_VARIANTS: Record<string, (added: Record<string, unknown>) => Record<string, unknown> | undefined> = {
  "no prevResult": () => undefined,
  "prevResult {}": () => ({}),
  "a prevResult without ips": (added) => {
    const { ips: _ips, ...rest } = added;
    return rest;
  },
};

const V = "1.0.0";

/** Rows of plugins the Go reference lacks, so the differential table has none. */
const OWN_ROWS: DiffCase[] = [
  {
    name: "tap + host-local",
    plugins: ["tap", "host-local"],
    list: (c) => ({ name: "dp-tap", cniVersion: V, plugins: [{ type: "tap", mtu: 1400, ipam: { type: "host-local", dataDir: c.dataDir, subnet: "10.81.1.0/24" } }] }),
  },
  {
    name: "dummy + host-local",
    plugins: ["dummy", "host-local"],
    kernel: ["dummy"],
    list: (c) => ({ name: "dp-dummy", cniVersion: V, plugins: [{ type: "dummy", ipam: { type: "host-local", dataDir: c.dataDir, subnet: "10.81.2.0/24" } }] }),
  },
  {
    name: "ptp → firewall (nftables) → portmap (nftables) → tuning → bandwidth → sbr",
    plugins: ["ptp", "host-local", "firewall", "portmap", "tuning", "bandwidth", "sbr"],
    capabilityArgs: { portMappings: [{ hostPort: 8181, containerPort: 80, protocol: "tcp" }] },
    list: (c) => ({
      name: "dp-chain",
      cniVersion: "1.1.0",
      plugins: [
        { type: "ptp", ipMasq: true, ipMasqBackend: "nftables", ipam: { type: "host-local", dataDir: c.dataDir, subnet: "10.81.3.0/24", routes: [{ dst: "0.0.0.0/0" }] } },
        { type: "firewall", backend: "nftables" },
        { type: "portmap", backend: "nftables", capabilities: { portMappings: true } },
        { type: "tuning", sysctl: { "net.ipv4.conf.eth0.arp_notify": "1" } },
        { type: "bandwidth", ingressRate: 800000, ingressBurst: 100000, egressRate: 400000, egressBurst: 50000 },
        { type: "sbr" },
      ],
    }),
  },
];

/**
 * Every plugin of ours in at least one chain: the first good row of the differential table for
 * each set of plugins (other rows of a set vary options DEL does not depend on), and
 * {@link OWN_ROWS}.
 */
export function delPrevResultRows(): DiffCase[] {
  const seen = new Set<string>();
  const rows = DIFF_CASES.filter((r) => {
    if (r.badInput === true || r.unsupported !== undefined) return false;
    const key = [...r.plugins].sort().join(" ");
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return [...rows, ...OWN_ROWS];
}

/** The rows needing a kernel feature only the VM lane has. */
export function needsVm(row: DiffCase): boolean {
  return (row.kernel ?? []).some((k) => VM_KERNEL_FEATURES.includes(k));
}

/** Where plugins keep per-attachment files (tuning backups, firewall records, portmap localnet, host-local, dhcp leases). */
const STATE_DIRS = ["/run/cni", "/var/lib/cni"];

/**
 * DEL's deletion marks (shared/firewall/attachment-lock.ts): kept on purpose after DEL (one to two hours,
 * so that `cni-plugins reload` never puts back a container being deleted), whether DEL had a
 * prevResult or not, and removed by the next ADD of the attachment.
 */
const DELETION_MARKS = "/run/cni/reload/deleted";

/** Paths of the files under `dirs` that name or mention `containerID`, with digits masked (netns inodes). */
function attachmentFiles(dirs: string[], containerID: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    if (dir === DELETION_MARKS) return;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const p = join(dir, name);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p);
      else if (p.includes(containerID) || safeRead(p).includes(containerID)) out.push(p.replace(/\d+/g, "N"));
    }
  };
  for (const d of dirs) walk(d);
  return out.sort();
}

function safeRead(p: string): string {
  try {
    return readFileSync(p, "latin1");
  } catch {
    return "";
  }
}

interface Outcome {
  add: ChainOutcome;
  del: ChainOutcome;
  del2: ChainOutcome;
  after: { host: unknown; container: unknown; files: string[] };
}

/** ADD, then DEL twice with `prevOf(ADD result)` as every plugin's prevResult, on a fresh node. */
async function runOnce(row: DiffCase, containerID: string, prevOf: (added: Record<string, unknown>) => Record<string, unknown> | undefined): Promise<Outcome> {
  const node = await createNode();
  const container = await createContainerNetns();
  try {
    const dataDir = makeTempDir("cni-delprev-store-");
    const prepared = await row.prepare?.(node, { binDir: OUR_BIN });
    const list = row.list({ dataDir, ...(prepared ? { prepared } : {}) });
    const att = {
      containerID,
      netns: container.path,
      ifName: row.ifName ?? "eth0",
      ...(row.args !== undefined ? { args: row.args } : {}),
      ...(row.capabilityArgs !== undefined ? { capabilityArgs: row.capabilityArgs } : {}),
    };
    const add = await runChain(node, OUR_BIN, list, att, "ADD");
    expect(describeOutcome(add)).toBe("ok");
    const prev = prevOf(add.result!);
    const del = await runChain(node, OUR_BIN, list, att, "DEL", prev);
    const del2 = await runChain(node, OUR_BIN, list, att, "DEL", prev);
    const files = attachmentFiles([...STATE_DIRS, dataDir], containerID).map((f) => f.replace(dataDir.replace(/\d+/g, "N"), "<dataDir>"));
    return { add, del, del2, after: { host: snapshot(node.host.path), container: snapshot(container.path), files } };
  } finally {
    await container.destroy();
    await node.host.destroy();
  }
}

function differs(d: Difference): string {
  const show = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));
  return `${d.path}: after the ordinary DEL ${show(d.go)}, after this DEL ${show(d.ours)}`;
}

/** The test body of one row: the ordinary DEL, then each variant, compared with it. */
export async function runDelPrevResultRow(row: DiffCase): Promise<void> {
  const containerID = `delprev-${row.name.replace(/[^a-zA-Z0-9]/g, "").slice(0, 40)}`;
  const base = await runOnce(row, containerID, (added) => added);
  expect(describeOutcome(base.del)).toBe("ok");
  expect(describeOutcome(base.del2)).toBe("ok");
  const problems: string[] = [];
  for (const [variant, prevOf] of Object.entries(DEL_PREV_VARIANTS)) {
    const r = await runOnce(row, containerID, prevOf);
    for (const [which, o] of [["DEL", r.del], ["second DEL", r.del2]] as const) {
      if (!o.ok) problems.push(`${variant}: ${which} failed: ${describeOutcome(o)}`);
    }
    for (const d of diffState(base.after, r.after, "afterDel")) problems.push(`${variant}: ${differs(d)}`);
  }
  expect(problems).toEqual([]);
}
