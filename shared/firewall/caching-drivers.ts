/**
 * Drivers for readers that look at many attachments at once (`cni-plugins reload`, operator/reload):
 * the chains of an iptables table are answered from ONE `iptables-save -t <table>` per IP family,
 * and an nftables table from ONE `nft -j list table`, until something is written through these
 * drivers (then that family's iptables tables, or that nftables table, are read again) or
 * {@link CachingDrivers.forget} is called — by the caller whenever others may have written meanwhile
 * (each time it takes the firewall lock). Checking a hundred attachments then costs a few tool runs
 * instead of hundreds. Rule lookups by chain over netlink (`listChain` of nftables) are not cached:
 * they cost no tool run.
 */
import type { FirewallDrivers } from "./backend.ts";
import type { IPFamily } from "../ip/addr.ts";
import type { IptablesDriver } from "./iptables/driver.ts";
import { isBuiltinChain } from "./iptables/driver.ts";
import { parseSave, type SavedTable } from "./iptables/save-format.ts";
import type { NftDriver } from "./nftables/driver.ts";
import type { NftTableState } from "./nftables/state.ts";

export interface CachingDrivers extends FirewallDrivers {
  /** Drops every copy: the next read of each table goes to the tools again. */
  forget(): void;
}

function cachingIptables(base: IptablesDriver): { driver: IptablesDriver; forget(): void } {
  const tables = new Map<string, SavedTable | null>();
  const forgetFamily = (family: IPFamily): void => {
    for (const key of [...tables.keys()]) if (key.startsWith(`${family}/`)) tables.delete(key);
  };
  const table = (family: IPFamily, name: string): SavedTable | null | undefined => {
    if (base.saveTable === undefined) return undefined;
    const key = `${family}/${name}`;
    if (!tables.has(key)) tables.set(key, parseSave(base.saveTable(family, name)).get(name) ?? null);
    return tables.get(key);
  };
  const driver: IptablesDriver = {
    available: () => base.available(),
    listChain(family, name, chain) {
      const t = table(family, name);
      if (t === undefined) return base.listChain(family, name, chain);
      const rules = t?.rules.get(chain);
      if (rules === undefined) return isBuiltinChain(name, chain) ? [] : undefined;
      return rules.map((r) => [...r]);
    },
    restore(family, text) {
      forgetFamily(family);
      base.restore(family, text);
    },
  };
  if (base.removeChains !== undefined) {
    const remove = base.removeChains.bind(base);
    driver.removeChains = (family, name, removals) => {
      forgetFamily(family);
      return remove(family, name, removals);
    };
  }
  return { driver, forget: () => tables.clear() };
}

function cachingNft(base: NftDriver): { driver: NftDriver; forget(): void } {
  const tables = new Map<string, NftTableState | undefined>();
  return {
    driver: {
      available: () => base.available(),
      run(tx) {
        tables.delete(`${tx.family} ${tx.table}`);
        base.run(tx);
      },
      listTable(family, name) {
        const key = `${family} ${name}`;
        if (!tables.has(key)) tables.set(key, base.listTable(family, name));
        return tables.get(key);
      },
      listChain: (family, name, chain) => base.listChain(family, name, chain),
    },
    forget: () => tables.clear(),
  };
}

/** `base`'s tools behind per-table copies (see module doc); the attachment lock is not part of them. */
export function cachingDrivers(base: FirewallDrivers): CachingDrivers {
  const ipt = cachingIptables(base.iptables);
  const nft = cachingNft(base.nftables);
  return {
    iptables: ipt.driver,
    nftables: nft.driver,
    forget() {
      ipt.forget();
      nft.forget();
    },
  };
}
