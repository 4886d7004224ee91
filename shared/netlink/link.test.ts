/** Decoding of the kind-specific IFLA_INFO_DATA into the Link record. */
import { describe, expect, test } from "bun:test";
import { buildMessage } from "./codec.ts";
import { IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO, IFLA_VRF_TABLE } from "./constants/if-link.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { parseLink, writeIfinfomsg } from "./link.ts";

/** An RTM_NEWLINK payload of `kind` whose IFLA_INFO_DATA holds attribute 1 = 1234 (u32). */
function payload(kind: string): Uint8Array {
  return buildMessage(RTM_NEWLINK, 0, (w) => {
    writeIfinfomsg(w, { index: 7 });
    w.attrString(IFLA_IFNAME, "vrf-red");
    w.nest(IFLA_LINKINFO, () => {
      w.attrString(IFLA_INFO_KIND, kind);
      w.nest(IFLA_INFO_DATA, () => w.attrU32(IFLA_VRF_TABLE, 1234));
    });
  }).subarray(16);
}

describe("parseLink", () => {
  test("a VRF's routing table (IFLA_VRF_TABLE) is decoded only for kind vrf", () => {
    expect(parseLink(payload("vrf"))).toMatchObject({ index: 7, name: "vrf-red", kind: "vrf", vrfTable: 1234 });
    expect(parseLink(payload("dummy")).vrfTable).toBeUndefined();
  });
});
