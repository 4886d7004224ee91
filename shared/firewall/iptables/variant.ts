/**
 * Which iptables the host uses: legacy (x_tables) or nf_tables. Decided in the spirit of
 * kubernetes-sigs/iptables-wrappers: the variant that already holds the host's rules wins, and
 * that variant's binaries (`iptables-legacy-save`, `iptables-nft-restore`, …) are then called by
 * name, never mixing the two.
 *
 * Order of the checks (each stops at the first answer):
 * 1. only one variant installed → that one; neither → the unversioned `iptables` tools ("plain");
 * 2. the legacy tables are all absent (/proc/net/ip{,6}_tables_names empty) → nft: legacy holds
 *    nothing, and reading /proc costs no process (the common case);
 * 3. kubelet's hint chains (`KUBE-IPTABLES-HINT`, `KUBE-KUBELET-CANARY`) in nft's mangle table → nft,
 *    in legacy's dump → legacy (the wrapper's current rule);
 * 4. count rules (`-A` lines) of iptables+ip6tables in each variant: legacy only when it holds
 *    strictly more (the wrapper's original rule; ties and "none" go to nft).
 */
import type { IPFamily } from "../../ip/ip.ts";

export type IptablesMode = "legacy" | "nft" | "plain";

/** What detection needs from the host; injectable for tests. */
export interface VariantProbe {
  /** True when the tool can be executed. */
  exists(tool: string): boolean;
  /** stdout of a save tool (e.g. `iptables-legacy-save`, `["-t","mangle"]`), "" on failure. */
  save(tool: string, args: readonly string[]): string;
  /** Names of the legacy tables of a family that exist in this netns (from /proc/net), [] if none. */
  legacyTables(family: IPFamily): string[];
}

const HINT = /^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\s/m;

function countRules(dump: string): number {
  let n = 0;
  for (const line of dump.split("\n")) if (line.startsWith("-")) n++;
  return n;
}

/** Decides the mode (see module doc); undefined when no iptables tools exist at all. */
export function detectIptablesMode(p: VariantProbe): IptablesMode | undefined {
  const legacy = p.exists("iptables-legacy-save") && p.exists("iptables-legacy-restore");
  const nft = p.exists("iptables-nft-save") && p.exists("iptables-nft-restore");
  if (!legacy && !nft) return p.exists("iptables-save") && p.exists("iptables-restore") ? "plain" : undefined;
  if (!legacy) return "nft";
  if (!nft) return "legacy";
  if (p.legacyTables(4).length === 0 && p.legacyTables(6).length === 0) return "nft";
  if (HINT.test(p.save("iptables-nft-save", ["-t", "mangle"])) || HINT.test(p.save("ip6tables-nft-save", ["-t", "mangle"]))) {
    return "nft";
  }
  // Without -t: a legacy save of a named table would create that table.
  const legacy4 = p.save("iptables-legacy-save", []);
  const legacy6 = p.save("ip6tables-legacy-save", []);
  if (HINT.test(legacy4) || HINT.test(legacy6)) return "legacy";
  const legacyCount = countRules(legacy4) + countRules(legacy6);
  if (legacyCount === 0) return "nft";
  const nftCount = countRules(p.save("iptables-nft-save", [])) + countRules(p.save("ip6tables-nft-save", []));
  return legacyCount > nftCount ? "legacy" : "nft";
}

/** Tool names for a mode and family: `[save, restore]`. */
export function toolsFor(mode: IptablesMode, family: IPFamily): { save: string; restore: string } {
  const base = family === 6 ? "ip6tables" : "iptables";
  const infix = mode === "plain" ? "" : `-${mode}`;
  return { save: `${base}${infix}-save`, restore: `${base}${infix}-restore` };
}
