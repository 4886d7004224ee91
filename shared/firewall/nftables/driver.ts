/**
 * The nftables backend as the firewall helpers see it ({@link NftDriver}): the host's in system.ts,
 * an in-memory twin for tests in fake.ts.
 */
import { CommandError } from "../exec.ts";
import type { NftTableState } from "./state.ts";
import type { NftRuleRef } from "../../netlink/nftables-rule.ts";
import type { NftFamily, NftTransaction } from "./transaction.ts";

export interface NftDriver {
  /** False when `nft` is not installed. */
  available(): boolean;
  /** Applies `tx` atomically (nothing when it is empty). */
  run(tx: NftTransaction): void;
  /** The table, or undefined when it does not exist. */
  listTable(family: NftFamily, table: string): NftTableState | undefined;
  /** The rules of one chain (chain, handle, comment), or undefined when the chain (or its table) does not exist. */
  listChain(family: NftFamily, table: string, chain: string): NftRuleRef[] | undefined;
}

/** The kernel has no nf_tables (the netlink answer to a request `nft` would have failed on). */
export class NftUnsupportedError extends Error {
  override name = "NftUnsupportedError";
}

/** nft's (or the kernel's) answer when nftables cannot be used here at all. */
export function isNftUnsupported(err: unknown): boolean {
  if (err instanceof NftUnsupportedError) return true;
  return err instanceof CommandError && /Operation not supported|Protocol not supported|not supported/i.test(err.stderr);
}

