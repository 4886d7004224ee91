/**
 * Golden bytes for the bridge request builders (bridge-vlan.ts, and `ip link set type bridge` in
 * link-set.ts) against what iproute2's `bridge` / `ip` sent
 * (test/fixtures/netlink/bridge-iproute2-requests.json); nlmsg_seq and nlmsg_pid (bytes 8..15) are
 * ignored. Plus decoding of a VLAN dump reply.
 */
import { describe, expect, test } from "bun:test";
import fixtures from "../../test/fixtures/netlink/bridge-iproute2-requests.json";
import { linkSetRequests } from "./link-set.ts";
import { buildBridgeVlanAddRequest, buildBridgeVlanDelRequest, buildBridgeVlanDumpRequest, parseBridgeVlanLink } from "./bridge-vlan.ts";
import { buildMessage, fromHex, toHex } from "./codec.ts";
import { BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_RANGE_BEGIN, BRIDGE_VLAN_INFO_RANGE_END, BRIDGE_VLAN_INFO_UNTAGGED, IFLA_BRIDGE_VLAN_INFO } from "./constants/if-bridge.ts";
import { IFLA_AF_SPEC } from "./constants/if-link.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { writeIfinfomsg } from "./link.ts";

const cases = fixtures.cases as Record<string, { command: string; ok: boolean; hex: string }>;
const vA = fixtures.context.ifindex.vA;
const br1 = fixtures.context.ifindex.br1;

const ours: Record<string, () => Uint8Array> = {
  "bridge-vlan-add-pvid-untagged": () => buildBridgeVlanAddRequest(vA, { vid: 100, pvid: true, untagged: true }),
  "bridge-vlan-add-tagged": () => buildBridgeVlanAddRequest(vA, { vid: 200 }),
  "bridge-vlan-del": () => buildBridgeVlanDelRequest(vA, { vid: 1 }),
  "bridge-vlan-show": () => buildBridgeVlanDumpRequest(),
  "bridge-set-vlan-filtering": () => linkSetRequests.bridge(br1, { vlanFiltering: true }),
  "bridge-set-vlan-default-pvid": () => linkSetRequests.bridge(br1, { vlanDefaultPvid: 0 }),
};

function withoutSeqPid(b: Uint8Array): string {
  const c = b.slice();
  c.fill(0, 8, 16);
  return toHex(c);
}

describe("bridge netlink requests match iproute2", () => {
  test("every captured command has a builder", () => {
    expect(Object.keys(ours).sort()).toEqual(Object.keys(cases).sort());
  });
  for (const [name, c] of Object.entries(cases)) {
    test(`${name}: ${c.command}`, () => {
      const build = ours[name];
      expect(build).toBeDefined();
      expect(withoutSeqPid(build!())).toBe(withoutSeqPid(fromHex(c.hex)));
    });
  }
  test("a VLAN id outside 1..4094 is refused before sending", () => {
    expect(() => buildBridgeVlanAddRequest(vA, { vid: 0 })).toThrow(RangeError);
    expect(() => buildBridgeVlanAddRequest(vA, { vid: 4095 })).toThrow(RangeError);
  });
});

describe("parseBridgeVlanLink", () => {
  function info(flags: number, vid: number): Uint8Array {
    const b = new Uint8Array(4);
    const v = new DataView(b.buffer);
    v.setUint16(0, flags, true);
    v.setUint16(2, vid, true);
    return b;
  }
  test("decodes single entries and expands ranges", () => {
    const msg = buildMessage(RTM_NEWLINK, 0, (w) => {
      writeIfinfomsg(w, { family: 7, index: 9 });
      w.nest(IFLA_AF_SPEC, () => {
        w.attr(IFLA_BRIDGE_VLAN_INFO, info(BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED, 100));
        w.attr(IFLA_BRIDGE_VLAN_INFO, info(BRIDGE_VLAN_INFO_RANGE_BEGIN, 200));
        w.attr(IFLA_BRIDGE_VLAN_INFO, info(BRIDGE_VLAN_INFO_RANGE_END, 202));
      });
    });
    const parsed = parseBridgeVlanLink(msg.subarray(16));
    expect(parsed.index).toBe(9);
    expect(parsed.vlans.map((v) => [v.vid, v.pvid, v.untagged])).toEqual([
      [100, true, true],
      [200, false, false],
      [201, false, false],
      [202, false, false],
    ]);
  });
});
