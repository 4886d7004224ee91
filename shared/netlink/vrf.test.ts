/** VRF request bytes against iproute2 (captured with strace; seq/pid ignored) and dump decoding. */
import { describe, expect, test } from "bun:test";
import { buildMessage, fromHex, toHex } from "./codec.ts";
import { IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO } from "./constants/if-link.ts";
import { IFLA_VRF_TABLE } from "./constants/if-link-vrf.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { writeIfinfomsg } from "./link.ts";
import { buildVrfAddRequest, parseVrfLink } from "./vrf.ts";

const IPROUTE2_VRF_ADD =
  "4800000010000506ab53026b00000000000000000000000000000000000000000d0003007672662d626c7565000000001800120007000100767266000c000200080001000a000000";

function withoutSeqPid(b: Uint8Array): string {
  const c = b.slice();
  c.fill(0, 8, 16);
  return toHex(c);
}

describe("vrf netlink", () => {
  test("ip link add vrf-blue type vrf table 10", () => {
    expect(withoutSeqPid(buildVrfAddRequest("vrf-blue", 10))).toBe(withoutSeqPid(fromHex(IPROUTE2_VRF_ADD)));
  });
  test("table 0 is refused before sending", () => {
    expect(() => buildVrfAddRequest("v", 0)).toThrow(RangeError);
  });
  test("parseVrfLink reads index, name and table; other kinds are not VRFs", () => {
    const msg = (kind: string) =>
      buildMessage(RTM_NEWLINK, 0, (w) => {
        writeIfinfomsg(w, { index: 7 });
        w.attrString(IFLA_IFNAME, "vrf-red");
        w.nest(IFLA_LINKINFO, () => {
          w.attrString(IFLA_INFO_KIND, kind);
          w.nest(IFLA_INFO_DATA, () => w.attrU32(IFLA_VRF_TABLE, 1234));
        });
      }).subarray(16);
    expect(parseVrfLink(msg("vrf"))).toEqual({ index: 7, name: "vrf-red", table: 1234 });
    expect(parseVrfLink(msg("bridge"))).toBeUndefined();
  });
});
