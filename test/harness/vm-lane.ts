/**
 * The set-up every VM-lane test file (test/integration/*.vm.test.ts; test/vm/README.md) shares:
 *
 * - {@link describeVm}: the file's block runs only as root in a throwaway netns (sandbox.ts), and
 *   only where the kernel has what the block needs (kernel.ts requireKernel: skipped with the reason
 *   on a host without it, a failing test inside the VM) or, with `onlyInVm`, only inside the VM.
 *   Every fixture (namespaces, links, temp dirs, processes) goes after each test (cleanup.ts).
 * - {@link vmPluginCalls}: for one file, the ids of each test (a container id and a network name
 *   unique in the run), a fresh container netns with a host-local data dir, and invocations with
 *   the file's interface name, for execPlugin (ours, dist/bin) and execGoPlugin (the Go reference)
 *   of exec-plugin.ts.
 */
import { describe } from "bun:test";
import { useFixtureCleanup } from "./cleanup.ts";
import type { PluginInvocation } from "./exec-plugin.ts";
import { inVmLane, requireKernel, type KernelFeature } from "./kernel.ts";
import { createContainerNetns, type ContainerNetns } from "./netns.ts";
import { sandboxed } from "./sandbox.ts";
import { makeTempDir } from "./tempdir.ts";

/** What a VM-lane block needs besides the sandbox. */
export interface VmNeeds {
  /** Kernel features the block needs (none: each test or row checks its own). */
  readonly kernel?: readonly KernelFeature[];
  /** Runs only inside the VM: it checks the VM itself, or changes kernel state no host may see changed. */
  readonly onlyInVm?: boolean;
}

/** Why a block needing `needs` does not run here (requireKernel prints a kernel reason on the host), or undefined. */
function unmetNeed(needs: VmNeeds): string | undefined {
  if (needs.onlyInVm === true && !inVmLane()) return "runs only in the VM lane";
  return needs.kernel === undefined || needs.kernel.length === 0 ? undefined : requireKernel(...needs.kernel);
}

/**
 * The top-level block of a VM-lane file: skipped outside a throwaway netns or when `needs` are not
 * met (the kernel is asked only inside a sandbox); its fixtures are cleaned after each test.
 */
export function describeVm(name: string, needs: VmNeeds, body: () => void): void {
  describe.skipIf(!sandboxed() || unmetNeed(needs) !== undefined)(name, () => {
    useFixtureCleanup();
    body();
  });
}

export interface VmTestIds {
  /** Container id `<prefix>-<tag>-<pid>-<n>`. */
  readonly cid: string;
  /** Network name `<prefix>net-<tag>-<n>`. */
  readonly net: string;
  /** How many ids the file has handed out, this one included (1, 2, ...): for per-test subnets and names. */
  readonly n: number;
}

export interface VmTestSetup extends VmTestIds {
  /** A fresh container netns (only `lo`, DOWN). */
  readonly ns: ContainerNetns;
  /** A fresh directory for host-local's leases. */
  readonly dataDir: string;
}

export interface VmPluginCalls {
  /** The next test's ids. */
  ids(tag: string): VmTestIds;
  /** The next test's ids, a fresh container netns and a fresh host-local data dir. */
  setUp(tag: string): Promise<VmTestSetup>;
  /** A call of `command` with the file's interface name. */
  inv(netns: string | undefined, command: string, config: unknown, containerID: string): PluginInvocation;
}

/** Ids, set-up and invocations for one file's tests; `prefix` keeps its ids apart from other files'. */
export function vmPluginCalls(prefix: string, ifName: string): VmPluginCalls {
  let n = 0;
  const ids = (tag: string): VmTestIds => {
    n++;
    return { cid: `${prefix}-${tag}-${process.pid}-${n}`, net: `${prefix}net-${tag}-${n}`, n };
  };
  return {
    ids,
    setUp: async (tag) => ({ ...ids(tag), ns: await createContainerNetns(), dataDir: makeTempDir(`${prefix}-store-`) }),
    inv: (netns, command, config, containerID) => ({ command, containerID, netns, ifName, config }),
  };
}
