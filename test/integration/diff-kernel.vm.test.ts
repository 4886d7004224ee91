/**
 * The differential rows (test/e2e/diff-cases.ts) that need kernel features the build host lacks
 * (bridge vlan filtering, ipvlan, 8021q vlan, vrf, dummy: `vmRows()`), run in the VM lane with
 * Debian's stock kernel: Go 1.1.1 (/usr/lib/cni, visible in the guest) and ours on identical fresh
 * namespaces, the same comparison and the same known differences as the host's diff lane.
 */
import { expect, test } from "bun:test";
import { describeVm } from "../harness/vm-lane.ts";
import { vmRows } from "../e2e/diff-cases.ts";
import { diffRowReason, runDiffRow } from "../e2e/lib/diff-run.ts";
import { rowTest } from "../e2e/lib/plugins.ts";

const ROWS = vmRows();

describeVm("differential (kernel features of the VM): Go 1.1.1 vs ours", {}, () => {
  test("the VM rows of the table are the kernel-feature rows", () => {
    expect(ROWS.map((r) => r.name).sort()).toEqual(["bridge vlan 10", "ipvlan l2", "ptp → vrf", "vlan 42 mtu 1400"]);
  });

  for (const row of ROWS) {
    rowTest(`diff (vm): ${row.name}`, diffRowReason(row), () => runDiffRow(row), 240_000);
  }
});
