/**
 * What cluster-local keeps (the registry's description, shared/node-state/ownership.ts): this
 * node's reservations in etcd (`ipam.etcd.node`), read with the plugin's own configuration: owner
 * records, and addresses reserved without one.
 */
import type { NetworkConfigList } from "../../shared/node-state/network-state.ts";
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { loadClusterLocalConfig } from "./config.ts";
import { EtcdClient } from "./etcd/client.ts";
import { NetworkKeys } from "./keys.ts";
import { nodeReservations } from "./release.ts";

/** One cluster-local reservation in etcd: an attachment's owner record, or an address without one. */
export interface ClusterLocalHolding {
  containerID: string;
  ifName: string;
  /** The etcd key. */
  key: string;
  ips: string[];
}

/** This node's reservations of `network`, given the plugin object that uses cluster-local. */
export async function etcdReservations(network: NetworkConfigList, plugin: Record<string, unknown>): Promise<ClusterLocalHolding[]> {
  const conf = loadClusterLocalConfig({ config: { ...plugin, name: network.name, cniVersion: network.cniVersion }, args: "" });
  const keys = new NetworkKeys(conf.etcd.prefix, conf.name);
  const found = await nodeReservations(new EtcdClient(conf.etcd), keys, conf.etcd.node);
  const owners = found.owners.map(({ kv, record }) => ({ containerID: record.containerID, ifName: record.ifname, key: kv.key, ips: record.ips }));
  const orphans = found.orphans.map((kv) => {
    const who = JSON.parse(kv.value) as { containerID: string; ifname: string };
    return { containerID: who.containerID, ifName: who.ifname, key: kv.key, ips: [kv.key.slice(keys.ipsPrefix.length)] };
  });
  return [...owners, ...orphans];
}

/** The description, reading etcd through `reservations` (tests give their own). */
export function clusterLocalOwnershipWith(reservations: typeof etcdReservations): PluginOwnership {
  return {
    state: {
      phase: "discover",
      async read(st, plugins) {
        for (const plugin of plugins) {
          await st.readLater("cluster-local reservations in etcd", async () => {
            for (const h of await reservations(st.network, plugin)) {
              const a = st.attachment(h.containerID, h.ifName);
              a.holdings.push({ kind: "cluster-local", what: `etcd ${h.key} (${h.ips.join(", ")})` });
              for (const ip of h.ips) a.addresses.add(ip);
            }
          });
        }
      },
    },
  };
}

export const clusterLocalOwnership: PluginOwnership = clusterLocalOwnershipWith(etcdReservations);
