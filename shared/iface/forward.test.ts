/** enableIPForward in a throwaway netns (root), and the pure family selection. */
import { describe, expect, test } from "bun:test";
import { withNetNS } from "../netns/index.ts";
import { createScratchNetns, runIn, skipUnlessRoot } from "../netns/testing.ts";
import { enableIPForward, forwardFamiliesOf } from "./forward.ts";

describe("forwardFamiliesOf", () => {
  test("picks the families present", () => {
    expect(forwardFamiliesOf([{ address: "10.0.0.2/24" }])).toEqual({ v4: true, v6: false });
    expect(forwardFamiliesOf([{ address: "fd00::2/64" }])).toEqual({ v4: false, v6: true });
    expect(forwardFamiliesOf([])).toEqual({ v4: false, v6: false });
  });
});

describe.skipIf(skipUnlessRoot("shared/ip forward"))("enableIPForward", () => {
  test("writes 1 only for the families asked for, in the calling thread's netns", () => {
    using scratch = createScratchNetns();
    const read = (k: string) => runIn(scratch, ["sysctl", "-n", k]).trim();
    // A new netns copies ip_forward from the host's (net.core.devconf_inherit_init_net): start from 0.
    runIn(scratch, ["sysctl", "-qw", "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"]);
    expect(read("net.ipv4.ip_forward")).toBe("0");
    withNetNS(scratch.ns, () => enableIPForward({ v4: true, v6: false }));
    expect(read("net.ipv4.ip_forward")).toBe("1");
    expect(read("net.ipv6.conf.all.forwarding")).toBe("0");
    withNetNS(scratch.ns, () => enableIPForward({ v4: true, v6: true }));
    expect(read("net.ipv6.conf.all.forwarding")).toBe("1");
  });
});
