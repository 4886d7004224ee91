/**
 * One iptables transaction: plan the changes against the chains they name (chain.ts), apply them
 * in ONE `iptables-restore --noflush`; when the restore fails because the tables changed between
 * reading and restoring (a concurrent plugin), start over from fresh reads, a few times.
 */
import type { IPFamily } from "../../ip/ip.ts";
import { CommandError } from "../exec.ts";
import { IptablesTransaction, type ChainReader } from "./chain.ts";
import type { IptablesDriver } from "./driver.ts";
import { savedChain } from "./save-format.ts";

const ATTEMPTS = 3;

/** Reads chains from one read of each table, made when the table is first needed. */
function tableReader(ipt: IptablesDriver, family: IPFamily): ChainReader {
  const tables = new Map<string, ReturnType<IptablesDriver["readTable"]>>();
  return (table, chain) => {
    if (!tables.has(table)) tables.set(table, ipt.readTable(family, table));
    return savedChain(tables.get(table), table, chain);
  };
}

/** Reads what the plan needs, for one IP family, without changing anything. */
export function readIptables<T>(ipt: IptablesDriver, family: IPFamily, read: (tx: IptablesTransaction) => T): T {
  return read(new IptablesTransaction(tableReader(ipt, family)));
}

/** Plans and applies changes for one IP family; a plan that changes nothing runs no restore. */
export function transactIptables(ipt: IptablesDriver, family: IPFamily, plan: (tx: IptablesTransaction) => void): void {
  for (let attempt = 1; ; attempt++) {
    const tx = new IptablesTransaction(tableReader(ipt, family));
    plan(tx);
    if (tx.empty) return;
    try {
      ipt.restore(family, tx.render());
      return;
    } catch (err) {
      if (attempt >= ATTEMPTS || !(err instanceof CommandError)) throw err;
    }
  }
}
