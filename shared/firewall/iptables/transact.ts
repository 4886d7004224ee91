/**
 * One iptables transaction: plan the changes against the chains they name (chain.ts, each listed
 * at most once), apply them in ONE `iptables-restore --noflush`; when the restore fails — an
 * optimistic assumption was wrong, or the chains changed between reading and restoring (a
 * concurrent plugin) — plan again from fresh reads, without assumptions, a few times.
 *
 * The first plan is optimistic (see chain.ts): on the hot path a call then reads only its own
 * chains, or nothing at all. An optimistic plan that would only assert (`-C`) is not sent: it is
 * planned again from reads, so a call that changes nothing never writes (with iptables-legacy
 * every write replaces the whole table in the kernel).
 */
import type { IPFamily } from "../../ip/addr.ts";
import { CommandError } from "../exec.ts";
import { IptablesPlanError, IptablesTransaction, type ChainReader } from "./chain.ts";
import type { IptablesDriver } from "./driver.ts";

/** Plans after the optimistic one (each retried after a failed restore). */
const EXACT_ATTEMPTS = 3;

/** Reads chains of `family`; `lazily`: rules read from the kernel stay undecoded until asked (lazy-rule.ts). */
function reader(ipt: IptablesDriver, family: IPFamily, lazily = true): ChainReader {
  return (table, chain, exact) =>
    exact === true || !lazily || ipt.listChainLazily === undefined ? ipt.listChain(family, table, chain) : ipt.listChainLazily(family, table, chain);
}

/** Reads what `read` needs, for one IP family, without changing anything. */
export function readIptables<T>(ipt: IptablesDriver, family: IPFamily, read: (tx: IptablesTransaction) => T): T {
  return read(new IptablesTransaction(reader(ipt, family)));
}

/** Plans and applies changes for one IP family (see module doc); a plan that changes nothing runs no restore. */
export function transactIptables(ipt: IptablesDriver, family: IPFamily, plan: (tx: IptablesTransaction) => void): void {
  let exact = 0;
  let lazily = true;
  for (let optimistic = true; ; optimistic = false) {
    const tx = new IptablesTransaction(reader(ipt, family, lazily), optimistic, lazily && (ipt.readsInKernel?.() ?? false));
    try {
      plan(tx);
    } catch (err) {
      // The plan had to read whole a chain it had already changed: planned again, every chain read whole.
      if (!(err instanceof IptablesPlanError) || !lazily) throw err;
      lazily = false;
      continue;
    }
    if (tx.empty) return;
    if (tx.changesNothing && optimistic) continue;
    if (!optimistic) exact++;
    try {
      ipt.restore(family, tx.render());
      return;
    } catch (err) {
      if (exact >= EXACT_ATTEMPTS || !(err instanceof CommandError)) throw err;
    }
  }
}
