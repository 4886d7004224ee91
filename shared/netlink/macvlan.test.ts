import { describe, expect, test } from "bun:test";
import { fromHex, toHex } from "./codec.ts";
import { buildMacvlanAddRequest } from "./link-add.ts";
import { buildMacvlanCreateRequest } from "./macvlan.ts";

/** iproute2-6.1.0: `ip link add link vA name mv0 type macvlan mode bridge bcqueuelen 100` (vA = ifindex 3), via strace. */
const IPROUTE2_BCQUEUELEN =
  "540000001000050633520" + "26b00000000" +
  "00000000000000000000000000000000" +
  "080005000300000008000300" + "6d763000" +
  "240012000b000100" + "6d6163766c616e00" +
  "1400020008000700640000000800010004000000";

function withoutSeqPid(b: Uint8Array): string {
  const c = b.slice();
  c.fill(0, 8, 16);
  return toHex(c);
}

describe("macvlan create request", () => {
  test("bcqueuelen: byte-identical to iproute2 (seq/pid ignored)", () => {
    const ours = buildMacvlanCreateRequest({ name: "mv0", parentIndex: 3, mode: "bridge", bcQueueLen: 100 });
    expect(withoutSeqPid(ours)).toBe(withoutSeqPid(fromHex(IPROUTE2_BCQUEUELEN)));
  });
  test("without the new options it equals the basic builder (itself golden-tested)", () => {
    for (const mode of ["bridge", "private", "vepa", "passthru"] as const) {
      const o = { name: "mv0", parentIndex: 3, mode, mtu: 1400, mac: "02:00:00:00:00:01", netnsFd: 4 };
      const basic = buildMacvlanAddRequest(o);
      const ours = buildMacvlanCreateRequest(o);
      expect(withoutSeqPid(ours)).toBe(withoutSeqPid(basic));
    }
  });
});
