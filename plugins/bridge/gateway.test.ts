import { describe, expect, test } from "bun:test";
import type { Result } from "../../shared/cni/types.ts";
import { formatCIDR } from "../../shared/ip/cidr.ts";
import { calcGateways } from "./gateway.ts";

describe("calcGateways", () => {
  test("isGateway fills missing gateways with network+1 and sets interface 2", () => {
    const r: Result = { ips: [{ address: "10.1.2.7/24" }, { address: "fd00:1::7/64" }] };
    const gws = calcGateways(r, { isGateway: true, isDefaultGateway: false });
    expect(r.ips).toEqual([
      { address: "10.1.2.7/24", gateway: "10.1.2.1", interface: 2 },
      { address: "fd00:1::7/64", gateway: "fd00:1::1", interface: 2 },
    ]);
    expect(gws[4].map(formatCIDR)).toEqual(["10.1.2.1/24"]);
    expect(gws[6].map(formatCIDR)).toEqual(["fd00:1::1/64"]);
    expect(r.routes).toBeUndefined();
  });

  test("an IPAM gateway is kept", () => {
    const r: Result = { ips: [{ address: "10.1.2.7/24", gateway: "10.1.2.254" }] };
    const gws = calcGateways(r, { isGateway: true, isDefaultGateway: false });
    expect(gws[4].map(formatCIDR)).toEqual(["10.1.2.254/24"]);
  });

  test("without isGateway nothing goes on the bridge", () => {
    const r: Result = { ips: [{ address: "10.1.2.7/24" }] };
    const gws = calcGateways(r, { isGateway: false, isDefaultGateway: false });
    expect(gws[4]).toEqual([]);
    expect(r.ips![0]!.gateway).toBeUndefined();
  });

  test("isDefaultGateway adds one default route per family", () => {
    const r: Result = { ips: [{ address: "10.1.2.7/24" }, { address: "10.1.3.7/24" }, { address: "fd00::7/64" }] };
    calcGateways(r, { isGateway: true, isDefaultGateway: true });
    expect(r.routes).toEqual([
      { dst: "0.0.0.0/0", gw: "10.1.2.1" },
      { dst: "::/0", gw: "fd00::1" },
    ]);
  });

  test("isDefaultGateway keeps an IPAM default route that has a gateway", () => {
    const r: Result = { ips: [{ address: "10.1.2.7/24" }], routes: [{ dst: "0.0.0.0/0", gw: "10.1.2.9" }] };
    calcGateways(r, { isGateway: true, isDefaultGateway: true });
    expect(r.routes).toEqual([{ dst: "0.0.0.0/0", gw: "10.1.2.9" }]);
  });
});
