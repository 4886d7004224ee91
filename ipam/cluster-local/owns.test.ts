import { describe, expect, test } from "bun:test";
import { NetworkState } from "../../shared/node-state/network-state.ts";
import { clusterLocalOwnershipWith, type ClusterLocalHolding } from "./owns.ts";

const noHost = { readDir: () => [], readFile: () => "", links: () => [] };

describe("cluster-local's state source", () => {
  const plugin = { type: "macvlan", ipam: { type: "cluster-local", etcd: { endpoints: ["http://etcd:2379"] } } };
  const net = { name: "n1", cniVersion: "1.0.0", plugins: [plugin] };

  test("this node's reservations are read with the plugin's config and grouped by attachment", async () => {
    const asked: Record<string, unknown>[] = [];
    const owns = clusterLocalOwnershipWith(async (_n, p): Promise<ClusterLocalHolding[]> => {
      asked.push(p);
      return [
        { containerID: "c1", ifName: "eth0", key: "/cni/ipam/n1/owners/c1/eth0", ips: ["10.9.0.2", "fd00::2"] },
        { containerID: "c2", ifName: "net1", key: "/cni/ipam/n1/ips/10.9.0.3", ips: ["10.9.0.3"] },
      ];
    });
    const st = new NetworkState(net);
    await owns.state!.read(st, [plugin], noHost);
    expect(asked).toEqual([plugin]);
    const c1 = st.attachments.get("c1\neth0")!;
    expect(c1.holdings).toEqual([{ kind: "cluster-local", what: "etcd /cni/ipam/n1/owners/c1/eth0 (10.9.0.2, fd00::2)" }]);
    expect([...c1.addresses]).toEqual(["10.9.0.2", "fd00::2"]);
    expect(st.attachments.get("c2\nnet1")!.holdings[0]!.kind).toBe("cluster-local");
    expect(st.problems).toEqual([]);
  });

  test("an unreachable etcd is a problem of the report", async () => {
    const owns = clusterLocalOwnershipWith(async () => {
      throw new Error("etcd is unavailable");
    });
    const st = new NetworkState(net);
    await owns.state!.read(st, [plugin], noHost);
    expect(st.problems).toEqual(["cluster-local reservations in etcd: etcd is unavailable"]);
  });
});
