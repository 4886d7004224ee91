/**
 * The host's nftables. Reads that only find rules and deletes by handle go to the kernel
 * directly (shared/netlink/nftables.ts): whether a table exists, {@link listNftChain} (the
 * handles and comments of one chain's rules), and a transaction made only of rule deletions.
 * They need no `nft` process and no cache of the whole ruleset, which on a node holding
 * kube-proxy's 20,000 iptables-nft rules costs every `nft` run tens of milliseconds. Everything
 * else runs through the tool: {@link applyNft} one transaction as one `nft -f -`,
 * {@link listNftTable} one table (`nft -j list table`, skipped when the table does not exist).
 */
import { NETLINK_NETFILTER } from "../../netlink/constants/nfnetlink.ts";
import { openNetlinkSocket } from "../../netlink/kernel-transport.ts";
import { NetlinkError } from "../../netlink/errors.ts";
import {
  isNftablesMissing,
  nftChainExists,
  nftDeleteRulesWhere,
  nftRemoveChains,
  type ChainRemoval,
  nftRuleList,
  nftRulePayloads,
  nftRules,
  nftRulesDelete,
  nftTableExists,
} from "../../netlink/nftables.ts";
import type { NftRule } from "../../netlink/nftables-rule.ts";
import type { NetlinkSocket } from "../../netlink/socket.ts";
import { CommandError, findExecutable, runCommand, type ToolEnv } from "../exec.ts";
import { NftUnsupportedError, type NftDriver } from "./driver.ts";
import { tableStateFromJson, type NftTableState } from "./state.ts";
import type { NftRuleRef } from "../../netlink/nftables-rule.ts";
import type { NftFamily, NftTransaction } from "./transaction.ts";

/**
 * Runs `fn` on a NETLINK_NETFILTER socket of the calling thread's netns; the kernel's "no
 * nf_tables here" becomes NftUnsupportedError.
 */
function withNftablesSocket<T>(fn: (sock: NetlinkSocket) => T): T {
  let sock: NetlinkSocket | undefined;
  try {
    sock = openNetlinkSocket(NETLINK_NETFILTER);
    return fn(sock);
  } catch (err) {
    if (isNftablesMissing(err)) throw new NftUnsupportedError(`nf_tables is not available: ${(err as Error).message}`, { cause: err });
    throw err;
  } finally {
    sock?.close();
  }
}

/**
 * Removes chains of an nf_tables table with the rules of their referrers that jump to them, in one
 * kernel batch (shared/netlink/nftables.ts nftRemoveChains); used for iptables-nft's tables. False
 * when the kernel has no nf_tables or refused the batch (nothing changed): the caller then goes
 * the tool's way, which reports what is wrong.
 */
export function removeChainsInKernel(family: NftFamily, table: string, removals: readonly ChainRemoval[]): boolean {
  try {
    withNftablesSocket((sock) => nftRemoveChains(sock, family, table, removals));
    return true;
  } catch (err) {
    if (err instanceof NftUnsupportedError || err instanceof NetlinkError) return false;
    throw err;
  }
}

/**
 * The rules of chain `<family> <table> <chain>` as `decode` reads them, in order, from the kernel
 * (shared/netlink/nftables.ts nftRules); used for iptables-nft's tables. undefined when the chain
 * does not exist; null when `decode` cannot read some rule (undefined) or the kernel has no
 * nf_tables: the caller then asks the tool.
 */
export function listChainInKernel<T>(family: NftFamily, table: string, chain: string, decode: (rule: NftRule) => T | undefined): T[] | undefined | null {
  try {
    return withNftablesSocket((sock) => {
      if (!nftChainExists(sock, family, table, chain)) return undefined;
      const out: T[] = [];
      for (const rule of nftRules(sock, family, table, chain)) {
        const read = decode(rule);
        if (read === undefined) return null;
        out.push(read);
      }
      return out;
    });
  } catch (err) {
    if (err instanceof NftUnsupportedError || err instanceof NetlinkError) return null;
    throw err;
  }
}

/**
 * The rules of chain `<family> <table> <chain>` undecoded (shared/netlink/nftables.ts
 * nftRulePayloads): undefined when the chain does not exist, null when the kernel has no
 * nf_tables or refused.
 */
export function chainRulesInKernel(family: NftFamily, table: string, chain: string): Uint8Array[] | undefined | null {
  try {
    return withNftablesSocket((sock) => (nftChainExists(sock, family, table, chain) ? nftRulePayloads(sock, family, table, chain) : undefined));
  } catch (err) {
    if (err instanceof NftUnsupportedError || err instanceof NetlinkError) return null;
    throw err;
  }
}

/**
 * Deletes the rules of chain `<family> <table> <chain>` that `pick` takes (true), in one kernel
 * batch (shared/netlink/nftables.ts nftDeleteRulesWhere); used for iptables-nft's tables. True when
 * done, also when the chain does not exist or nothing was taken. False, with nothing changed, when
 * `pick` cannot tell for some rule (undefined), the kernel has no nf_tables or refused the batch:
 * the caller then goes the tool's way, which reports what is wrong. `mentions`: as for
 * nftDeleteRulesWhere (rules lacking all of them are not asked about).
 */
export function deleteRulesInKernel(
  family: NftFamily,
  table: string,
  chain: string,
  pick: (rule: NftRule) => boolean | undefined,
  mentions?: readonly Uint8Array[],
): boolean {
  try {
    return withNftablesSocket((sock) => nftDeleteRulesWhere(sock, family, table, chain, pick, mentions)) !== undefined;
  } catch (err) {
    if (err instanceof NftUnsupportedError || err instanceof NetlinkError) return false;
    throw err;
  }
}

/** nft's answer for a missing table/chain/rule. */
export function isNftNotFound(err: unknown): boolean {
  return err instanceof CommandError && /No such file or directory/.test(err.stderr);
}

/** True when the `nft` tool is installed (on the invocation's PATH or in the sbin directories). */
export function nftAvailable(env: ToolEnv): boolean {
  return findExecutable("nft", env) !== undefined;
}

/**
 * Applies `tx` atomically; an empty transaction does nothing. One made only of rule deletions is
 * one netlink batch (a rule already gone is no error, as for DEL); any other runs as one
 * `nft -f -`.
 */
export function applyNft(tx: NftTransaction, env: ToolEnv): void {
  if (tx.empty) return;
  const deletes = tx.ops.flatMap((op) => (op.kind === "rule" && op.verb === "delete" ? [{ chain: op.chain, handle: op.handle }] : []));
  if (deletes.length === tx.ops.length) {
    withNftablesSocket((sock) => nftRulesDelete(sock, tx.family, tx.table, deletes));
    return;
  }
  runCommand(["nft", "-f", "-"], env, { input: tx.render() });
}

/** `nft -j list <what…>` of one table, normalised; undefined when the object does not exist. */
function listNft(what: readonly string[], family: NftFamily, table: string, env: ToolEnv): NftTableState | undefined {
  const argv = ["nft", "-j", "list", ...what];
  const res = runCommand(argv, env, { allowFailure: true });
  if (res.status !== 0) {
    const err = new CommandError(argv, res.status, res.stderr);
    if (isNftNotFound(err)) return undefined;
    throw err;
  }
  let parsed: { nftables?: unknown[] };
  try {
    parsed = JSON.parse(res.stdout) as { nftables?: unknown[] };
  } catch (cause) {
    throw new CommandError(argv, 0, `unparsable JSON output: ${String(cause)}`, { cause });
  }
  return tableStateFromJson(family, table, parsed.nftables ?? []);
}

/**
 * `nft -j list table <family> <table>`, normalised; undefined when the table does not exist (asked
 * of the kernel first, so a missing table costs no `nft` run).
 */
export function listNftTable(family: NftFamily, table: string, env: ToolEnv): NftTableState | undefined {
  if (!withNftablesSocket((sock) => nftTableExists(sock, family, table))) return undefined;
  return listNft(["table", family, table], family, table, env);
}

/** The rules of `<family> <table> <chain>` as the kernel lists them; undefined when the chain or table does not exist. */
export function listNftChain(family: NftFamily, table: string, chain: string): NftRuleRef[] | undefined {
  return withNftablesSocket((sock) => (nftChainExists(sock, family, table, chain) ? nftRuleList(sock, family, table, chain) : undefined));
}

/** The host's nftables for one invocation, through the `nft` tool run with its environment `env`. */
export function systemNft(env: ToolEnv): NftDriver {
  return {
    available: () => nftAvailable(env),
    run: (tx) => applyNft(tx, env),
    listTable: (family, table) => listNftTable(family, table, env),
    listChain: listNftChain,
  };
}
