/**
 * Which kernel networking features this machine has, found by trying them.
 *
 * {@link kernelFeature} creates one link of each kind in a throwaway network namespace
 * (`unshare -n`), one probe per feature, all in a single child process started on first use and
 * cached for the rest of the test process. {@link requireKernel} is the test-side gate:
 *
 * ```ts
 * describe.skipIf(requireKernel("ipvlan") !== undefined)("ipvlan", () => { ... });
 * ```
 *
 * On the host a missing feature skips the block and prints why. Inside the VM lane (test/vm/, env
 * {@link VM_LANE_ENV}) the kernel is expected to have everything, so nothing is ever skipped there:
 * a feature that is STILL missing registers a failing test naming it, and the tests that need it
 * run (and fail) as well.
 */
import { test } from "bun:test";
import { spawnSync } from "node:child_process";
import { isRoot } from "./sandbox.ts";

/** Set to "1" by test/vm/guest-tests.sh for the `bun test` it runs inside the VM. */
export const VM_LANE_ENV = "CNI_TEST_VM_LANE";

/**
 * Comma-separated features to treat as missing whatever the kernel says, to rehearse the skip path
 * on a host that has everything, or the VM lane's failure path (e.g. `CNI_TEST_KERNEL_MISSING=dummy`).
 */
export const PRETEND_MISSING_ENV = "CNI_TEST_KERNEL_MISSING";

export const KERNEL_FEATURES = [
  "bridge_vlan_filtering",
  "ipvlan",
  "vlan",
  "dummy",
  "vrf",
  "macvlan",
  "ifb",
] as const;

export type KernelFeature = (typeof KERNEL_FEATURES)[number];

/**
 * One shell command per feature, run in a fresh netns. Each must exit 0 exactly when the link could
 * be created. Stacked kinds get their own veth as the lower device: a device that already carries
 * an ipvlan cannot take a macvlan (one rx handler per device), so sharing one would fail wrongly.
 */
const PROBES: Record<KernelFeature, string> = {
  bridge_vlan_filtering: "ip link add kbr0 type bridge vlan_filtering 1",
  ipvlan: "ip link add kipvm type veth peer name kipvp && ip link add kipv0 link kipvm type ipvlan mode l2",
  vlan: "ip link add kvlm type veth peer name kvlp && ip link add kvl0 link kvlm type vlan id 42",
  dummy: "ip link add kdm0 type dummy",
  vrf: "ip link add kvrf0 type vrf table 4242",
  macvlan: "ip link add kmvm type veth peer name kmvp && ip link add kmv0 link kmvm type macvlan mode bridge",
  ifb: "ip link add kifb0 type ifb",
};

export interface KernelProbe {
  readonly supported: boolean;
  /** `ip`'s error text when not supported (e.g. "Error: Unknown device type."). */
  readonly detail: string;
}

let cache: Map<KernelFeature, KernelProbe> | undefined;

function probeScript(): string {
  const lines: string[] = [];
  for (const feature of KERNEL_FEATURES) {
    // "name rc message" per feature; the message is ip's stderr squeezed onto one line.
    lines.push(`m=$( { ${PROBES[feature]}; } 2>&1); printf '%s %s %s\\n' ${feature} $? "$(printf '%s' "$m" | tr '\\n' ' ')"`);
  }
  return lines.join("\n");
}

function probeAll(): Map<KernelFeature, KernelProbe> {
  const results = new Map<KernelFeature, KernelProbe>();
  const fail = (detail: string): Map<KernelFeature, KernelProbe> => {
    for (const f of KERNEL_FEATURES) results.set(f, { supported: false, detail });
    return results;
  };
  if (!isRoot()) return fail("probing needs root (unshare -n)");
  const run = spawnSync("unshare", ["--net", "--", "/bin/sh", "-c", probeScript()], {
    encoding: "utf8",
    timeout: 30_000,
  });
  if (run.error !== undefined) return fail(`unshare -n failed: ${run.error.message}`);
  if (run.status !== 0) return fail(`unshare -n exited ${run.status}: ${run.stderr.trim()}`);
  for (const line of run.stdout.split("\n")) {
    const m = /^(\S+) (\d+) ?(.*)$/.exec(line);
    if (m === null) continue;
    const feature = KERNEL_FEATURES.find((f) => f === m[1]);
    if (feature === undefined) continue;
    results.set(feature, { supported: m[2] === "0", detail: (m[3] ?? "").trim() });
  }
  for (const f of KERNEL_FEATURES) {
    if (!results.has(f)) results.set(f, { supported: false, detail: "the probe printed no result" });
  }
  return results;
}

function pretendMissing(name: KernelFeature): boolean {
  return (process.env[PRETEND_MISSING_ENV] ?? "").split(",").some((n) => n.trim() === name);
}

/** The probe result for `name` (probes every feature once per process, on first use). */
export function kernelProbe(name: KernelFeature): KernelProbe {
  if (pretendMissing(name)) return { supported: false, detail: `marked missing by ${PRETEND_MISSING_ENV}` };
  cache ??= probeAll();
  return cache.get(name) ?? { supported: false, detail: "unknown feature" };
}

/** True when this kernel can create the link kind `name` stands for. */
export function kernelFeature(name: KernelFeature): boolean {
  return kernelProbe(name).supported;
}

/** True inside the VM lane's `bun test`. */
export function inVmLane(): boolean {
  return process.env[VM_LANE_ENV] === "1";
}

const reportedMissing = new Set<KernelFeature>();

/**
 * The reason to skip a block needing `names`, or undefined to run it. On the host the reason is also
 * printed (bun does not print skip reasons). In the VM lane this never returns a reason: a missing
 * feature registers a failing test `kernel feature <name> is available in the VM` instead.
 */
export function requireKernel(...names: KernelFeature[]): string | undefined {
  const missing = names.filter((n) => !kernelFeature(n));
  if (missing.length === 0) return undefined;
  const details = missing.map((n) => `${n} (${kernelProbe(n).detail || "not supported"})`).join(", ");
  if (inVmLane()) {
    for (const name of missing) {
      if (reportedMissing.has(name)) continue;
      reportedMissing.add(name);
      const detail = kernelProbe(name).detail;
      test(`kernel feature ${name} is available in the VM`, () => {
        throw new Error(`the VM lane's kernel lacks ${name}: ${detail || "not supported"}`);
      });
    }
    return undefined;
  }
  const reason = `kernel lacks ${details}; runs in the VM lane (make test-vm)`;
  process.stderr.write(`skip: ${reason}\n`);
  return reason;
}
