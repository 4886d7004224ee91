import { expect, test } from "bun:test";
import { toHex } from "./codec.ts";
import { buildConntrackDeleteRequest, buildConntrackDumpRequest, parseConntrackFlow } from "./nfnetlink-conntrack.ts";

test("dump request: IPCTNL_MSG_CT_GET (0x0101), REQUEST|DUMP, nfgenmsg AF_INET v0", () => {
  expect(toHex(buildConntrackDumpRequest(4))).toBe("140000000101010300000000000000000200" + "0000");
});

test("delete request round-trips through the dump parser (payload after the nlmsghdr)", () => {
  const flow = { family: 4 as const, proto: 17, src: Uint8Array.of(192, 168, 77, 2), dst: Uint8Array.of(192, 168, 77, 1), srcPort: 40000, dstPort: 9053, id: 0xdeadbeef, zone: 3 };
  const msg = buildConntrackDeleteRequest(flow);
  expect(msg[4]).toBe(2); // IPCTNL_MSG_CT_DELETE
  expect(msg[5]).toBe(1); // NFNL_SUBSYS_CTNETLINK
  const parsed = parseConntrackFlow(msg.subarray(16));
  expect(parsed).toEqual(flow);
  // ports are big-endian on the wire: 9053 = 0x235d
  expect(toHex(msg)).toContain("235d");
});
