/**
 * Which iptables the host uses: legacy (x_tables) or nf_tables. Decided in the spirit of
 * kubernetes-sigs/iptables-wrappers: the variant that already holds the host's rules wins, and
 * that variant's binaries (`iptables-legacy`, `iptables-nft-restore`, …) are then called by name,
 * never mixing the two.
 *
 * The rule (each step stops at the first answer):
 * 1. only one variant installed → that one; neither → the unversioned `iptables` tools ("plain");
 * 2. legacy holds nothing — no legacy table exists (/proc/net/ip{,6}_tables_names), or the existing
 *    ones hold no rule and no kubelet hint chain → nft;
 * 3. kubelet's hint chains (`KUBE-IPTABLES-HINT`, `KUBE-KUBELET-CANARY`, in mangle) in nft → nft,
 *    in legacy → legacy (the wrapper's current rule);
 * 4. legacy only when it holds strictly more rules (iptables + ip6tables) than nft (the wrapper's
 *    original rule; ties go to nft).
 *
 * Every process decides once, and cheaply where it matters: reading /proc costs no process (the
 * common case ends at step 2); legacy tables are read one at a time (`-save -t <table>`, mangle
 * first for the hint, nat last as the biggest on kube-proxy nodes), and only until the answer is
 * known. nft is read whole (one save per family, for its hints and its rule count) only when
 * legacy holds something: on such a node nft is normally near-empty.
 */
import type { IPFamily } from "../../ip/addr.ts";

export type IptablesMode = "legacy" | "nft" | "plain";

/** What detection needs from the host; injectable for tests. */
export interface VariantProbe {
  /** True when the tool can be executed. */
  exists(tool: string): boolean;
  /** stdout of a tool (e.g. `iptables-legacy-save`, `["-t","mangle"]`), "" on failure. */
  run(tool: string, args: readonly string[]): string;
  /** Names of the legacy tables of a family that exist in this netns (from /proc/net), [] if none. */
  legacyTables(family: IPFamily): string[];
}

/** A hint chain, in save (`:CHAIN`) or `-S` (`-N CHAIN`) output. */
const HINT = /^(?::|-N )(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b/m;

/** Legacy tables in reading order: mangle first (the hint), nat last (kube-proxy's, the biggest). */
const TABLE_ORDER = ["mangle", "raw", "security", "filter"];

function countRules(dump: string): number {
  let n = 0;
  for (const line of dump.split("\n")) if (line.startsWith("-A")) n++;
  return n;
}

function base(family: IPFamily): string {
  return family === 6 ? "ip6tables" : "iptables";
}

/** Decides the mode (see module doc); undefined when no iptables tools exist at all. */
export function detectIptablesMode(p: VariantProbe): IptablesMode | undefined {
  const legacy = p.exists("iptables-legacy-save") && p.exists("iptables-legacy-restore");
  const nft = p.exists("iptables-nft-save") && p.exists("iptables-nft-restore");
  if (!legacy && !nft) return p.exists("iptables-save") && p.exists("iptables-restore") ? "plain" : undefined;
  if (!legacy) return "nft";
  if (!nft) return "legacy";

  const rank = (t: string): number => (TABLE_ORDER.includes(t) ? TABLE_ORDER.indexOf(t) : t === "nat" ? TABLE_ORDER.length + 1 : TABLE_ORDER.length);
  const tables = ([4, 6] as const)
    .flatMap((family) => p.legacyTables(family).map((table) => ({ family, table })))
    .sort((a, b) => rank(a.table) - rank(b.table));
  if (tables.length === 0) return "nft";
  let read = 0;
  let legacyRules = 0;
  let legacyHint = false;
  const readNext = (): boolean => {
    const t = tables[read++];
    if (t === undefined) return false;
    const dump = p.run(`${base(t.family)}-legacy-save`, ["-t", t.table]);
    legacyHint ||= HINT.test(dump);
    legacyRules += countRules(dump);
    return true;
  };

  while (legacyRules === 0 && !legacyHint && readNext());
  if (legacyRules === 0 && !legacyHint) return "nft";
  const nft4 = p.run("iptables-nft-save", []);
  const nft6 = p.run("ip6tables-nft-save", []);
  if (HINT.test(nft4) || HINT.test(nft6)) return "nft";
  while (tables[read]?.table === "mangle" && !legacyHint) readNext();
  if (legacyHint) return "legacy";
  const nftRules = countRules(nft4) + countRules(nft6);
  while (legacyRules <= nftRules && readNext());
  return legacyRules > nftRules ? "legacy" : "nft";
}

/** Tool names for a mode and family. */
export function toolsFor(mode: IptablesMode, family: IPFamily): { iptables: string; save: string; restore: string } {
  const infix = mode === "plain" ? "" : `-${mode}`;
  const b = base(family);
  return { iptables: `${b}${infix}`, save: `${b}${infix}-save`, restore: `${b}${infix}-restore` };
}
