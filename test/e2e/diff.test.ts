/**
 * Differential suite (`make test-diff`): every row of diff-cases.ts is run by the Go 1.1.1
 * reference (/usr/lib/cni) and by ours, each on its own fresh host namespace + container namespace.
 * Compared: ADD exit status / CNI error code / parsed result (MACs, veth names and netns paths
 * normalised; `"dns": {}` included), kernel + firewall state of host and container after ADD, CHECK and DEL status, the
 * state after DEL, a repeated DEL, and VERSION. A difference fails the row unless
 * known-differences.ts excuses it (those are printed as NOTE lines). Root, inside the throwaway
 * netns made by test/run.ts. Rows needing a kernel feature this host lacks are printed skips here
 * and run in the VM lane (test/integration/diff-kernel.vm.test.ts).
 */
import { describe, expect } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { diffOrdered, formatDifference } from "./lib/compare.ts";
import { diffRowReason, runDiffRow } from "./lib/diff-run.ts";
import { createNode, runOnNode } from "./lib/node.ts";
import { GO_BIN_DIR, OUR_BIN, missingReason, rowTest } from "./lib/plugins.ts";
import { DIFF_CASES } from "./diff-cases.ts";
import { knownDifference } from "./known-differences.ts";

describe.skipIf(!sandboxed())("differential: Go 1.1.1 vs ours", () => {
  useFixtureCleanup();

  for (const row of DIFF_CASES) {
    rowTest(`diff: ${row.name}`, diffRowReason(row), () => runDiffRow(row));
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
