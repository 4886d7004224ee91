/**
 * One iptables transaction: read the table once (`-save`), let the caller plan the changes, apply
 * them in ONE `iptables-restore --noflush`; when the restore fails because the table changed
 * between save and restore (a concurrent plugin), start over from a fresh read, a few times.
 */
import type { IPFamily } from "../../ip/ip.ts";
import { CommandError } from "../exec.ts";
import { IptablesPlan } from "./chain.ts";
import type { IptablesDriver } from "./driver.ts";

const ATTEMPTS = 3;

/** Plans and applies changes to `table` of one IP family; a plan that changes nothing runs no restore. */
export function transactIptables(
  ipt: IptablesDriver,
  family: IPFamily,
  table: string,
  plan: (p: IptablesPlan) => void,
): void {
  for (let attempt = 1; ; attempt++) {
    const p = new IptablesPlan(table, ipt.readTable(family, table));
    plan(p);
    if (p.empty) return;
    try {
      ipt.restore(family, p.render());
      return;
    } catch (err) {
      if (attempt >= ATTEMPTS || !(err instanceof CommandError)) throw err;
    }
  }
}
