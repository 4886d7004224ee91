/**
 * One differential row, end to end: the Go 1.1.1 reference (/usr/lib/cni) and ours each run the
 * row on a fresh host namespace + container namespace; the outcomes and the kernel/firewall
 * snapshots are compared and every difference not excused by known-differences.ts fails the row.
 * Shared by the host lane (test/e2e/diff.test.ts) and the VM lane
 * (test/integration/diff-kernel.vm.test.ts, the rows that need kernel features the host lacks).
 * The arm64 lane (test/e2e/arch-diff.test.ts) compares two builds of ours the same way
 * ({@link diffRowBetween}), with no difference excused.
 */
import { expect } from "bun:test";
import { createContainerNetns } from "../../harness/netns.ts";
import { requireKernel } from "../../harness/kernel.ts";
import { makeTempDir } from "../../harness/tempdir.ts";
import { describeOutcome, runChain, type ChainOutcome } from "./chain.ts";
import { diffOrdered, diffState, formatDifference, normaliseResult, type Difference } from "./compare.ts";
import { createNode, type Node } from "./node.ts";
import { GO_BIN_DIR, OUR_BIN, missingReason } from "./plugins.ts";
import { snapshot } from "./snapshot.ts";
import type { DiffCase } from "../diff-cases.ts";
import { knownDifference } from "../known-differences.ts";

export interface SideRecord {
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

/**
 * One side of a row. `shared`: a node kept across rows (the caller destroys it); a row that prepares
 * its host (a master link, a daemon) still gets a fresh node, as prepare assumes one.
 */
async function runSide(row: DiffCase, binDir: string, shared?: Node): Promise<SideRecord> {
  const fresh = shared === undefined || row.prepare !== undefined;
  const node = fresh ? await createNode() : shared;
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
    if (fresh) await node.host.destroy();
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

/** Both sides of `row` (the reference's plugins, then the candidate's) and their differences. */
export async function diffRowBetween(
  row: DiffCase,
  referenceBin: string,
  candidateBin: string,
  nodes?: { reference: Node; candidate: Node },
): Promise<{ reference: SideRecord; candidate: SideRecord; differences: Difference[] }> {
  const reference = await runSide(row, referenceBin, nodes?.reference);
  const candidate = await runSide(row, candidateBin, nodes?.candidate);
  return { reference, candidate, differences: compareSides(reference, candidate, row.badInput === true) };
}

/** The error texts behind every step whose status differs (and ADD of a bad input), for the log. */
export function logStepErrors(row: DiffCase, reference: SideRecord, candidate: SideRecord, diffs: Difference[]): void {
  const msg = (o: ChainOutcome | undefined) => (o?.failed?.run.json as any)?.msg;
  for (const step of ["add", "check", "del", "del2"] as const) {
    if (!(step === "add" && row.badInput) && !diffs.some((d) => d.path.startsWith(`${step}.status`))) continue;
    process.stderr.write(`diff: ${row.name}: ${step}: go=${JSON.stringify(statusOf(reference[step]))} ${JSON.stringify(msg(reference[step]))} | ours=${JSON.stringify(statusOf(candidate[step]))} ${JSON.stringify(msg(candidate[step]))}\n`);
  }
}

/** The test body of one row: Go, then ours, then the comparison (NOTE lines for excused differences). */
export async function runDiffRow(row: DiffCase): Promise<void> {
  const { reference: go, candidate: ours, differences: diffs } = await diffRowBetween(row, GO_BIN_DIR, OUR_BIN);
  const unexplained: string[] = [];
  for (const d of diffs) {
    const known = knownDifference(row.name, d.path, d.go, d.ours);
    if (known) process.stderr.write(`NOTE diff: ${row.name}: ${d.path} differs (${known.kind}: ${known.reason})\n`);
    else unexplained.push(formatDifference(d));
  }
  logStepErrors(row, go, ours, diffs);
  expect(unexplained).toEqual([]);
  // A row whose ADD fails on both sides alike compares nothing: the reference must succeed.
  if (!row.badInput) expect(describeOutcome(go.add)).toBe("ok");
}
