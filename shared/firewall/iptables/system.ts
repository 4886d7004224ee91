/**
 * The host's iptables for one invocation ({@link systemIptables}): the detected variant's tools
 * (variant.ts), and with iptables-nft the kernel directly where a read or a deletion needs no tool
 * run (nftables/system.ts).
 */
import { readTextFile } from "../../sys/file.ts";
import type { IPFamily } from "../../ip/addr.ts";
import { CommandError, CommandNotFoundError, findExecutable, runCommand, type ToolEnv } from "../exec.ts";
import { parseChainRule } from "../../netlink/nftables.ts";
import { chainRulesInKernel, deleteRulesInKernel, listChainInKernel, removeChainsInKernel } from "../nftables/system.ts";
import type { NftFamily } from "../nftables/transaction.ts";
import { isBuiltinChain, parseChainListing, type IptablesDriver } from "./driver.ts";
import { LazyRule } from "./lazy-rule.ts";
import { iptablesArgs } from "./nft-rules.ts";
import { hasRule, needleOf } from "./rule.ts";
import { detectIptablesMode, toolsFor, type IptablesMode, type VariantProbe } from "./variant.ts";

/** The nf_tables family of iptables-nft's tables for an IP family (`ip filter`, `ip6 nat`, …). */
function nftFamily(family: IPFamily): NftFamily {
  return family === 6 ? "ip6" : "ip";
}

/** iptables' answers for "no such chain" (iptables-nft 1.8.9 calls a missing chain "incompatible"). */
const NO_CHAIN = /No chain\/target\/match by that name|does not exist|is incompatible/;

/** Names of the legacy (x_tables) tables that exist in the current netns. */
export function legacyTableNames(family: IPFamily): string[] {
  try {
    const text = readTextFile(family === 6 ? "/proc/net/ip6_tables_names" : "/proc/net/ip_tables_names");
    return text.split("\n").filter((s) => s !== "");
  } catch {
    return [];
  }
}

/** The host's tools as variant detection sees them, run with the invocation's environment. */
function hostProbe(env: ToolEnv): VariantProbe {
  return {
    exists: (tool) => findExecutable(tool, env) !== undefined,
    run: (tool, args) => {
      try {
        return runCommand([tool, ...args], env, { allowFailure: true }).stdout;
      } catch {
        return "";
      }
    },
    legacyTables: legacyTableNames,
  };
}

/** The host's iptables variant now (detected afresh on every call). */
export function hostIptablesMode(env: ToolEnv): IptablesMode | undefined {
  return detectIptablesMode(hostProbe(env));
}

/**
 * The real host iptables for one invocation (tools run with its environment `env`), through `mode`
 * or (by default) the variant {@link hostIptablesMode} picks on first use by this driver. One driver
 * serves one invocation: a resident process detects again for the next, since the host may have
 * changed variant meanwhile (kube-proxy started, a distribution switched).
 */
export function systemIptables(env: ToolEnv, mode?: IptablesMode): Required<IptablesDriver> {
  let detected: IptablesMode | undefined | null = null;
  const currentMode = (): IptablesMode | undefined => {
    if (mode !== undefined) return mode;
    if (detected === null) detected = hostIptablesMode(env);
    return detected;
  };
  const tools = (family: IPFamily): ReturnType<typeof toolsFor> => {
    const m = currentMode();
    if (m === undefined) throw new CommandNotFoundError(family === 6 ? "ip6tables" : "iptables");
    return toolsFor(m, family);
  };
  const driver: Required<IptablesDriver> = {
    available: () => currentMode() !== undefined,
    readsInKernel: () => currentMode() === "nft",
    listChainLazily(family, table, chain) {
      if (currentMode() !== "nft") return driver.listChain(family, table, chain);
      const payloads = chainRulesInKernel(nftFamily(family), table, chain);
      if (payloads === null) return driver.listChain(family, table, chain);
      if (payloads === undefined) return isBuiltinChain(table, chain) ? [] : undefined;
      return payloads.map((p) => new LazyRule(p, () => {
        const rule = parseChainRule(p, table, chain);
        return rule === undefined ? undefined : iptablesArgs(family, rule);
      }));
    },
    listChain(family, table, chain) {
      const builtin = isBuiltinChain(table, chain);
      // A legacy table that does not exist is not read: reading it would create it.
      if (currentMode() === "legacy" && !legacyTableNames(family).includes(table)) return builtin ? [] : undefined;
      // iptables-nft keeps its chains in nf_tables: read there (no iptables run) when the chain is
      // missing — the common case on DEL, where the other backend's chain is looked for — or when
      // every rule is of a shape nft-rules.ts reads, as the plugins' own chains and jumps are.
      if (currentMode() === "nft") {
        const inKernel = listChainInKernel(nftFamily(family), table, chain, (rule) => iptablesArgs(family, rule));
        if (inKernel === undefined) return builtin ? [] : undefined;
        if (inKernel !== null) return inKernel;
      }
      const argv = [tools(family).iptables, "--wait", "-t", table, "-S", chain];
      const res = runCommand(argv, env, { allowFailure: true });
      if (res.status === 0) return parseChainListing(res.stdout, chain);
      if (res.status === 1 && !builtin && NO_CHAIN.test(res.stderr)) return undefined;
      throw new CommandError(argv, res.status, res.stderr);
    },
    restore(family, text) {
      runCommand([tools(family).restore, "--noflush", "--wait"], env, { input: text });
    },
    removeChains(family, table, removals) {
      return currentMode() === "nft" && removeChainsInKernel(nftFamily(family), table, removals);
    },
    deleteRules(family, table, chain, rules) {
      if (currentMode() !== "nft") return false;
      const needles = rules.map(needleOf);
      const mentions = needles.every((n) => n !== undefined) ? (needles as Uint8Array[]) : undefined;
      return deleteRulesInKernel(
        nftFamily(family),
        table,
        chain,
        (rule) => {
          const args = iptablesArgs(family, rule);
          return args === undefined ? undefined : hasRule(rules, args);
        },
        mentions,
      );
    },
    saveTable(family, table) {
      if (currentMode() === "legacy" && !legacyTableNames(family).includes(table)) return "";
      return runCommand([tools(family).save, "-t", table], env).stdout;
    },
  };
  return driver;
}
