/**
 * The public face of shared/firewall/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { clearDeletionMark, deletionMarks, deletionMarkTime, tryLockFirewall } from "./attachment-lock.ts";
export type { AttachmentKey, DeletionMark } from "./attachment-lock.ts";
export { chooseBackend, collectEverywhere, lockOf, runAll, teardownEverywhere } from "./backend.ts";
export { systemFirewallDrivers, systemFirewallPluginDeps } from "./system.ts";
export type { BackendName, FirewallDrivers, FirewallFeature, FirewallPluginDeps } from "./backend.ts";
export { cachingDrivers } from "./caching-drivers.ts";
export type { CachingDrivers } from "./caching-drivers.ts";
export { findExecutable, runCommand } from "./exec.ts";
export { checkMasquerade, collectMasquerade, masqBackendOf, MASQUERADE_STEP, MASQUERADE_TABLES, masqueradeTeardownStep, setupMasquerade } from "./ipmasq-steps.ts";
export { ipMasqPart } from "./ipmasq.ts";
export type { MasqBackendName } from "./ipmasq-feature.ts";
export type { IptablesPlan, IptRule } from "./iptables/chain.ts";
export { hostIptablesMode, systemIptables } from "./iptables/system.ts";
export type { IptablesDriver } from "./iptables/driver.ts";
export { chainNeedle, commentMatch, hasRule, ruleComment, ruleTarget, sameRules } from "./iptables/rule.ts";
export { tokenize } from "./iptables/save-format.ts";
export { readIptables, transactIptables } from "./iptables/transact.ts";
export { toolsFor } from "./iptables/variant.ts";
export type { IptablesMode } from "./iptables/variant.ts";
export { formatChainNameWithPrefix, formatComment, hashPrefix, masqInstanceHash } from "./naming.ts";
export type { NftDriver } from "./nftables/driver.ts";
export { normalizeRule } from "./nftables/state.ts";
export type { NftRuleState, NftTableState } from "./nftables/state.ts";
export { NftTransaction } from "./nftables/transaction.ts";
export type { NftFamily } from "./nftables/transaction.ts";
export type { AnyFirewallPart, AsyncFirewallPart, FirewallPart, FirewallPartsOf } from "./reapply.ts";
