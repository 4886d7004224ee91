/**
 * GC of the firewall plugin (spec 1.1.0; upstream's firewall has none) for attachments not in
 * `cni.dev/valid-attachments`:
 * - nftables: the rules tagged with this network and a stale attachment (nftables-backend.ts);
 * - iptables and firewalld: the rules carry no owner, so the addresses come from the records ADD
 *   wrote (records.ts). A stale attachment's addresses are removed as its DEL would remove them
 *   (iptables: the two CNI-FORWARD rules per address; firewalld: the zone source), except those
 *   another recorded attachment still relies on (an address reused by a live container, here or
 *   in another network, shares the very same rules) and those configured in some network namespace
 *   of the node (a live container without a record — added by the Go plugin, whose DEL left our
 *   record of an earlier owner behind — uses them); then the record goes.
 * Every step runs; failures are reported together.
 */
import type { ValidAttachment } from "../../shared/cni/types.ts";
import { collectEverywhere } from "../../shared/firewall/backend.ts";
import type { BackendName } from "../../shared/firewall/backend.ts";
import { teardown, type TeardownStep } from "../../shared/undo/teardown.ts";
import type { FirewalldRules, FirewallRules, FirewallTarget } from "./backend.ts";
import type { FirewallConf } from "./config.ts";
import { allRecords, forgetAttachment, type AttachmentRecord } from "./records.ts";

/** What one address rule or zone source is: the same key means the same rules on the host. */
function ruleKey(r: AttachmentRecord, host: string): string {
  return r.backend === "firewalld" ? `firewalld ${r.zone} ${host}` : `iptables ${host}`;
}

/** The stale records of `network` and, for each, the addresses that may go. */
export function staleRecords(records: readonly AttachmentRecord[], network: string, keep: readonly ValidAttachment[]): { record: AttachmentRecord; addrs: AttachmentRecord["addrs"] }[] {
  const stale = (r: AttachmentRecord): boolean => r.network === network && !keep.some((k) => k.containerID === r.containerID && k.ifName === r.ifName);
  const claimed = new Set(records.filter((r) => !stale(r)).flatMap((r) => r.addrs.map((a) => ruleKey(r, a.host))));
  return records.filter(stale).map((record) => ({ record, addrs: record.addrs.filter((a) => !claimed.has(ruleKey(record, a.host))) }));
}

/** What GC works with: the rule-writing backends, firewalld (connected on first use), the records' directory. */
export interface GcContext {
  features: Record<BackendName, FirewallRules>;
  firewalld(): FirewalldRules;
  stateDir: string;
  /** Addresses configured in any network namespace of the node (shared/iface/node-addresses.ts). */
  nodeAddresses(): ReadonlyMap<string, string>;
}

/** GC for `conf`'s network (see module doc). */
export async function collectFirewall(conf: FirewallConf, keep: readonly ValidAttachment[], ctx: GcContext): Promise<void> {
  const steps: TeardownStep[] = [{ name: "nftables rules", run: () => collectEverywhere(Object.values(ctx.features), conf.name, keep) }];
  let configured: ReadonlyMap<string, string> | undefined;
  for (const stale of staleRecords(allRecords(ctx.stateDir), conf.name, keep)) {
    const { record } = stale;
    configured ??= ctx.nodeAddresses();
    const inUse = configured;
    const addrs = stale.addrs.filter((a) => !inUse.has(a.ip));
    const t: FirewallTarget = {
      conf: { ...conf, zone: record.zone },
      containerID: record.containerID,
      ifName: record.ifName,
      addrs,
      policy: "open",
      bridge: undefined,
      policyFamilies: [],
    };
    steps.push({
      name: `${record.backend} rules of ${record.containerID}/${record.ifName}`,
      run: async () => {
        const backend = record.backend === "firewalld" ? ctx.firewalld() : ctx.features.iptables;
        if (backend.available()) await backend.teardown(t, false);
        forgetAttachment(ctx.stateDir, record.network, record.containerID, record.ifName);
      },
    });
  }
  await teardown(steps);
}
