/**
 * Differential suite (`make test-diff`): every row of diff-cases.ts is run by the Go 1.1.1
 * reference (/usr/lib/cni) and by ours, each on its own fresh host namespace + container namespace.
 * Compared: ADD exit status / CNI error code / parsed result (MACs, veth names, empty dns
 * normalised), kernel + firewall state of host and container after ADD, CHECK and DEL status, the
 * state after DEL, a repeated DEL, and VERSION. A difference fails the row unless
 * known-differences.ts excuses it (those are printed as NOTE lines). Root, inside the throwaway
 * netns made by test/run.ts.
 */
import { describe, expect } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { requireKernel } from "../harness/kernel.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { runChain, type ChainOutcome } from "./lib/chain.ts";
import { diffOrdered, diffState, formatDifference, normaliseResult, type Difference } from "./lib/compare.ts";
import { createNode, runOnNode } from "./lib/node.ts";
import { GO_BIN_DIR, OUR_BIN, missingReason, rowTest } from "./lib/plugins.ts";
import { snapshot } from "./lib/snapshot.ts";
import { DIFF_CASES, type DiffCase } from "./diff-cases.ts";
import { knownDifference } from "./known-differences.ts";

interface SideRecord {
  add: ChainOutcome;
  check?: ChainOutcome;
  del?: ChainOutcome;
  del2?: ChainOutcome;
  afterAdd?: { host: unknown; container: unknown };
  afterDel?: { host: unknown; container: unknown };
}

function statusOf(o: ChainOutcome | undefined): unknown {
  if (o === undefined) return undefined;
  if (o.ok) return { ok: true };
  const run = o.failed?.run;
  return { ok: false, plugin: o.failed?.type, exit: run?.status, code: (run?.json as any)?.code };
}

async function runSide(row: DiffCase, binDir: string): Promise<SideRecord> {
  const node = await createNode();
  const container = await createContainerNetns();
  row.prepare?.(node);
  const list = row.list({ dataDir: makeTempDir("cni-diff-store-") });
  const att = {
    containerID: `diff-${row.name.replace(/[^a-zA-Z0-9]/g, "").slice(0, 40)}`,
    netns: container.path,
    ifName: row.ifName ?? "eth0",
    ...(row.args !== undefined ? { args: row.args } : {}),
    ...(row.capabilityArgs !== undefined ? { capabilityArgs: row.capabilityArgs } : {}),
  };
  const rec: SideRecord = { add: await runChain(node, binDir, list, att, "ADD") };
  rec.afterAdd = { host: snapshot(node.host.path), container: snapshot(container.path) };
  if (rec.add.ok && !row.badInput) {
    rec.check = await runChain(node, binDir, list, att, "CHECK", rec.add.result);
  }
  if (rec.add.ok || !row.badInput) {
    rec.del = await runChain(node, binDir, list, att, "DEL", rec.add.result);
    rec.del2 = await runChain(node, binDir, list, att, "DEL", rec.add.result);
    rec.afterDel = { host: snapshot(node.host.path), container: snapshot(container.path) };
  }
  await container.destroy();
  await node.host.destroy();
  return rec;
}

function compareSides(go: SideRecord, ours: SideRecord, badInput: boolean): Difference[] {
  const out: Difference[] = [];
  diffOrdered(statusOf(go.add), statusOf(ours.add), "add.status", out);
  if (go.add.ok && ours.add.ok) diffOrdered(normaliseResult(go.add.result), normaliseResult(ours.add.result), "result", out);
  if (badInput) return out;
  diffState(go.afterAdd, ours.afterAdd, "afterAdd", out);
  diffOrdered(statusOf(go.check), statusOf(ours.check), "check.status", out);
  diffOrdered(statusOf(go.del), statusOf(ours.del), "del.status", out);
  diffOrdered(statusOf(go.del2), statusOf(ours.del2), "del2.status", out);
  diffState(go.afterDel, ours.afterDel, "afterDel", out);
  return out;
}

function rowReason(row: DiffCase): string | undefined {
  if (row.unsupported !== undefined) return row.unsupported;
  const missing = missingReason(row.plugins, { go: true });
  if (missing !== undefined) return missing;
  if (row.kernel && row.kernel.length > 0) {
    const k = requireKernel(...row.kernel);
    if (k !== undefined) return `${k}`;
  }
  return undefined;
}

describe.skipIf(!sandboxed())("differential: Go 1.1.1 vs ours", () => {
  useFixtureCleanup();

  for (const row of DIFF_CASES) {
    rowTest(`diff: ${row.name}`, rowReason(row), async () => {
      const go = await runSide(row, GO_BIN_DIR);
      const ours = await runSide(row, OUR_BIN);
      const diffs = compareSides(go, ours, row.badInput === true);
      const unexplained: string[] = [];
      for (const d of diffs) {
        const known = knownDifference(row.name, d.path, d.go, d.ours);
        if (known) process.stderr.write(`NOTE diff: ${row.name}: ${d.path} differs (${known.kind}: ${known.reason})\n`);
        else unexplained.push(formatDifference(d));
      }
      if (row.badInput) {
        const msg = (o: ChainOutcome) => (o.failed?.run.json as any)?.msg;
        process.stderr.write(`diff: ${row.name}: go=${JSON.stringify(statusOf(go.add))} ${JSON.stringify(msg(go.add))} | ours=${JSON.stringify(statusOf(ours.add))} ${JSON.stringify(msg(ours.add))}\n`);
      }
      expect(unexplained).toEqual([]);
    });
  }

  // VERSION of every plugin both sides have: only the documented 1.1.0 additions may differ.
  for (const type of ["bridge", "ptp", "host-local", "static", "loopback", "portmap", "firewall", "tuning", "bandwidth", "sbr", "vrf", "macvlan", "ipvlan", "vlan", "host-device", "dhcp"]) {
    rowTest(`diff: VERSION ${type}`, missingReason([type], { go: true }), async () => {
      const node = await createNode();
      const inv = { command: "VERSION", containerID: "", netns: "", ifName: "", config: '{"cniVersion":"0.4.0"}' };
      const go = await runOnNode(node, type, { ...inv, binDir: GO_BIN_DIR });
      const ours = await runOnNode(node, type, { ...inv, binDir: OUR_BIN });
      const diffs = diffOrdered({ exit: go.status, ...go.json }, { exit: ours.status, ...ours.json }, "version");
      const unexplained = diffs.filter((d) => knownDifference(`VERSION ${type}`, d.path) === undefined).map(formatDifference);
      expect(unexplained).toEqual([]);
      await node.host.destroy();
    });
  }
});
