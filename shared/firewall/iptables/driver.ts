/**
 * The iptables backend as the firewall helpers see it, per IP family: list ONE chain
 * (`iptables -t <table> -S <chain>`) and apply one transaction (`iptables-restore --noflush`).
 * There is deliberately no way to read a whole table: on a node whose nat table holds tens of
 * thousands of rules (kube-proxy), `iptables-save` costs hundreds of milliseconds, while
 * iptables-nft fetches only the chain a command names (and with iptables-nft a chain that does not
 * exist is known from the kernel without a run). system.ts talks to the host through the detected
 * variant (variant.ts); fake.ts is the in-memory twin for tests.
 */
import type { IPFamily } from "../../ip/addr.ts";
import type { IptRule } from "./chain.ts";
import type { ChainListing } from "./lazy-rule.ts";
import { BUILTIN_CHAINS, tokenize } from "./save-format.ts";

export interface IptablesDriver {
  /** False when no iptables tools are installed (the backend is unusable). */
  available(): boolean;
  /**
   * The rules of one chain (argument lists without `-A <chain>`), [] for an empty chain; undefined
   * when the chain does not exist. A built-in chain exists even when its table does not (reading
   * never creates a table).
   */
  listChain(family: IPFamily, table: string, chain: string): string[][] | undefined;
  /**
   * {@link listChain}, with rules read from the kernel left undecoded until a question needs them
   * (lazy-rule.ts), where the variant allows it (iptables-nft). Absent: plan with `listChain`.
   */
  listChainLazily?(family: IPFamily, table: string, chain: string): ChainListing | undefined;
  /** True when `listChainLazily` reads the kernel, running no tool (iptables-nft). */
  readsInKernel?(): boolean;
  /** Applies one restore transaction (`*table … COMMIT`, several tables allowed) without flushing anything else. */
  restore(family: IPFamily, text: string): void;
  /**
   * Removes chains that exist, each with every rule of its `referrers` jumping to it, in one atomic
   * step without running a tool — where the variant allows it (iptables-nft: nf_tables over
   * netlink). False when it cannot or the kernel refused (nothing changed): plan a restore instead.
   */
  removeChains?(family: IPFamily, table: string, removals: readonly { chain: string; referrers: readonly string[] }[]): boolean;
  /**
   * The whole table (`iptables-save -t <table>`), for readers that look at many chains at once
   * (`cni-plugins inspect`, reload's checks); "" for a legacy table that does not exist (reading it
   * would create it). Absent on drivers that cannot (fakes): read chain by chain then.
   */
  saveTable?(family: IPFamily, table: string): string;
  /**
   * Deletes every rule of `chain` equal to one of `rules` in one atomic step without running a
   * tool — where the variant allows it (iptables-nft: the chain is read over netlink and its rules
   * read back as iptables arguments, nft-rules.ts). True also when there was nothing to delete.
   * False when it cannot decide (a rule of the chain in a shape it does not read) or the kernel
   * refused (nothing changed): plan a restore instead.
   */
  deleteRules?(family: IPFamily, table: string, chain: string, rules: readonly IptRule[]): boolean;
}

/** True for a built-in chain of `table` (PREROUTING of nat, FORWARD of filter, …). */
export function isBuiltinChain(table: string, chain: string): boolean {
  return BUILTIN_CHAINS[table]?.includes(chain) ?? false;
}

/**
 * The rules of `chain` in `iptables -S <chain>` output (`-P`/`-N` lines skipped). Rule lines have
 * the same form and quoting as iptables-save's.
 */
export function parseChainListing(text: string, chain: string): string[][] {
  const rules: string[][] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("-A ")) continue;
    const toks = tokenize(line);
    if (toks[1] === chain) rules.push(toks.slice(2));
  }
  return rules;
}

