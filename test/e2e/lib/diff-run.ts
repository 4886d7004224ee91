/**
 * One differential row, end to end: the Go 1.1.1 reference (/usr/lib/cni) and ours each run the
 * row on a fresh host namespace + container namespace; the outcomes and the kernel/firewall
 * snapshots are compared and every difference not excused by known-differences.ts fails the row.
 * Shared by the host lane (test/e2e/diff.test.ts) and the VM lane
 * (test/integration/diff-kernel.vm.test.ts, the rows that need kernel features the host lacks).
 */
import { expect } from "bun:test";
import { createContainerNetns } from "../../harness/netns.ts";
import { requireKernel } from "../../harness/kernel.ts";
import { makeTempDir } from "../../harness/tempdir.ts";
import { describeOutcome, runChain, type ChainOutcome } from "./chain.ts";
import { diffOrdered, diffState, formatDifference, normaliseResult, type Difference } from "./compare.ts";
import { createNode } from "./node.ts";
import { GO_BIN_DIR, OUR_BIN, missingReason } from "./plugins.ts";
import { snapshot } from "./snapshot.ts";
import type { DiffCase } from "../diff-cases.ts";
import { knownDifference } from "../known-differences.ts";

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
  try {
    const prepared = await row.prepare?.(node, { binDir });
    const list = row.list({ dataDir: makeTempDir("cni-diff-store-"), ...(prepared ? { prepared } : {}) });
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
    return rec;
  } finally {
    await container.destroy();
    await node.host.destroy();
  }
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

/** Why `row` cannot run here (unsupported, a plugin missing on either side, a kernel feature), or undefined. */
export function diffRowReason(row: DiffCase): string | undefined {
  if (row.unsupported !== undefined) return row.unsupported;
  const missing = missingReason(row.plugins, { go: true });
  if (missing !== undefined) return missing;
  if (row.kernel && row.kernel.length > 0) {
    const k = requireKernel(...row.kernel);
    if (k !== undefined) return `${k}`;
  }
  return undefined;
}

/** The test body of one row: Go, then ours, then the comparison (NOTE lines for excused differences). */
export async function runDiffRow(row: DiffCase): Promise<void> {
  const go = await runSide(row, GO_BIN_DIR);
  const ours = await runSide(row, OUR_BIN);
  const diffs = compareSides(go, ours, row.badInput === true);
  const unexplained: string[] = [];
  for (const d of diffs) {
    const known = knownDifference(row.name, d.path, d.go, d.ours);
    if (known) process.stderr.write(`NOTE diff: ${row.name}: ${d.path} differs (${known.kind}: ${known.reason})\n`);
    else unexplained.push(formatDifference(d));
  }
  // The error texts behind every step whose status differs (and ADD of a bad input), for the log.
  const msg = (o: ChainOutcome | undefined) => (o?.failed?.run.json as any)?.msg;
  for (const step of ["add", "check", "del", "del2"] as const) {
    if (!(step === "add" && row.badInput) && !diffs.some((d) => d.path.startsWith(`${step}.status`))) continue;
    process.stderr.write(`diff: ${row.name}: ${step}: go=${JSON.stringify(statusOf(go[step]))} ${JSON.stringify(msg(go[step]))} | ours=${JSON.stringify(statusOf(ours[step]))} ${JSON.stringify(msg(ours[step]))}\n`);
  }
  expect(unexplained).toEqual([]);
  // A row whose ADD fails on both sides alike compares nothing: the reference must succeed.
  if (!row.badInput) expect(describeOutcome(go.add)).toBe("ok");
}
