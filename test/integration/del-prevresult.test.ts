/**
 * DEL succeeds with no prevResult, `{}` or a prevResult without `ips`, for every plugin in a real
 * chain, and leaves exactly what an ordinary DEL leaves (test/e2e/lib/del-prevresult.ts). The rows
 * that need ipvlan, 8021q, vrf or dummy run in the VM lane (del-prevresult.vm.test.ts); cluster-local
 * on its etcd cluster (cluster-local.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { requireKernel } from "../harness/kernel.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { delPrevResultRows, needsVm, runDelPrevResultRow } from "../e2e/lib/del-prevresult.ts";
import { missingReason, rowTest } from "../e2e/lib/plugins.ts";
import { pluginNames } from "../../registry/registry.ts";

const ROWS = delPrevResultRows().filter((r) => !needsVm(r));

/** Plugins whose DEL variants are tested with what they need, elsewhere. */
const ELSEWHERE: Record<string, string> = {
  "cluster-local": "test/integration/cluster-local.test.ts, on its etcd cluster",
};

describe.skipIf(!sandboxed())("DEL with a missing or empty prevResult (host lane)", () => {
  useFixtureCleanup();

  test("every plugin of ours is in a row (here or in the VM lane) or tested ELSEWHERE", () => {
    const covered = new Set(delPrevResultRows().flatMap((r) => r.plugins));
    expect(pluginNames().filter((p) => !covered.has(p) && ELSEWHERE[p] === undefined)).toEqual([]);
  });

  for (const row of ROWS) {
    rowTest(`DEL prevResult variants: ${row.name}`, missingReason(row.plugins) ?? (row.kernel ? requireKernel(...row.kernel) : undefined), () => runDelPrevResultRow(row), 240_000);
  }
});
