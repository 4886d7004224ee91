/**
 * The rows of test/e2e/lib/del-prevresult.ts that need kernel features the build host lacks
 * (ipvlan, 8021q vlan, vrf, dummy, bridge vlan filtering), in the VM lane: DEL succeeds with no
 * prevResult, `{}` or a prevResult without `ips`, and leaves what an ordinary DEL leaves.
 */
import { requireKernel } from "../harness/kernel.ts";
import { describeVm } from "../harness/vm-lane.ts";
import { delPrevResultRows, needsVm, runDelPrevResultRow } from "../e2e/lib/del-prevresult.ts";
import { missingReason, rowTest } from "../e2e/lib/plugins.ts";

const ROWS = delPrevResultRows().filter(needsVm);

describeVm("DEL with a missing or empty prevResult (VM lane)", {}, () => {
  for (const row of ROWS) {
    rowTest(`DEL prevResult variants (vm): ${row.name}`, missingReason(row.plugins) ?? requireKernel(...row.kernel!), () => runDelPrevResultRow(row), 240_000);
  }
});
