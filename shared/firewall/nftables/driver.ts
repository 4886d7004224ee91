/**
 * The nftables backend: {@link applyNft} runs one transaction as one `nft -f -`;
 * {@link listNftTable} reads one table (`nft -j list table`) and {@link listNftChain} one chain
 * (`nft -j list chain`: cheaper where only one chain matters). {@link NftDriver} lets the
 * firewall helpers run against fake.ts in tests.
 */
import { CommandError, findExecutable, runCommand } from "../exec.ts";
import { tableStateFromJson, type NftRuleState, type NftTableState } from "./state.ts";
import type { NftFamily, NftTransaction } from "./transaction.ts";

export interface NftDriver {
  /** False when `nft` is not installed. */
  available(): boolean;
  /** Applies `tx` atomically (nothing when it is empty). */
  run(tx: NftTransaction): void;
  /** The table, or undefined when it does not exist. */
  listTable(family: NftFamily, table: string): NftTableState | undefined;
  /** The rules of one chain, or undefined when the chain (or its table) does not exist. */
  listChain(family: NftFamily, table: string, chain: string): NftRuleState[] | undefined;
}

/** nft's answer when the kernel or nft cannot do nftables at all. */
export function isNftUnsupported(err: unknown): boolean {
  return err instanceof CommandError && /Operation not supported|Protocol not supported|not supported/i.test(err.stderr);
}

/** nft's answer for a missing table/chain/rule. */
export function isNftNotFound(err: unknown): boolean {
  return err instanceof CommandError && /No such file or directory/.test(err.stderr);
}

/** True when the `nft` tool is installed. */
export function nftAvailable(): boolean {
  return findExecutable("nft") !== undefined;
}

/** Runs `tx` as one `nft -f -` transaction; an empty transaction runs nothing. */
export function applyNft(tx: NftTransaction): void {
  if (tx.empty) return;
  runCommand(["nft", "-f", "-"], { input: tx.render() });
}

/** `nft -j list <what…>` of one table, normalised; undefined when the object does not exist. */
function listNft(what: readonly string[], family: NftFamily, table: string): NftTableState | undefined {
  const argv = ["nft", "-j", "list", ...what];
  const res = runCommand(argv, { allowFailure: true });
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

/** `nft -j list table <family> <table>`, normalised; undefined when the table does not exist. */
export function listNftTable(family: NftFamily, table: string): NftTableState | undefined {
  return listNft(["table", family, table], family, table);
}

/** `nft -j list chain <family> <table> <chain>`: its rules; undefined when the chain or table does not exist. */
export function listNftChain(family: NftFamily, table: string, chain: string): NftRuleState[] | undefined {
  return listNft(["chain", family, table, chain], family, table)?.rules.filter((r) => r.chain === chain);
}

/** The host's nftables through the `nft` tool. */
export const systemNft: NftDriver = {
  available: nftAvailable,
  run: applyNft,
  listTable: listNftTable,
  listChain: listNftChain,
};
