import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { withNetNS } from "../netns/enter.ts";
import { createScratchNetns, runIn, skipUnlessRoot, type ScratchNetns } from "../netns/testing.ts";
import { Handle } from "../netlink/handle.ts";
import { ENOENT, SyscallError } from "../sys/errno.ts";
import { SysctlNameError, sysctlGet, sysctlPath, sysctlSet } from "./sysctl.ts";

describe("sysctlPath (upstream separator rule)", () => {
  test.each([
    ["net.ipv4.ip_forward", "/proc/sys/net/ipv4/ip_forward"],
    ["net/ipv4/ip_forward", "/proc/sys/net/ipv4/ip_forward"],
    // dotted: '.' and '/' swap, so an interface name with a dot is written with '/'
    ["net.ipv4.conf.eth0/1.rp_filter", "/proc/sys/net/ipv4/conf/eth0.1/rp_filter"],
    // slashed: everything stays, dots included
    ["net/ipv4/conf/eth0.1/rp_filter", "/proc/sys/net/ipv4/conf/eth0.1/rp_filter"],
    ["net.ipv6.conf.all.forwarding", "/proc/sys/net/ipv6/conf/all/forwarding"],
    ["kernel", "/proc/sys/kernel"],
  ])("%s -> %s", (name, path) => {
    expect(sysctlPath(name)).toBe(path);
  });

  test.each(["", "/net/ipv4/ip_forward", "net..ipv4", "net.ipv4.", "net/../../etc/passwd", "net.ipv4.conf.../x"])("rejects %p", (name) => {
    expect(() => sysctlPath(name)).toThrow(SysctlNameError);
  });
});

describe("sysctlGet / sysctlSet on the local kernel (read-only use)", () => {
  test("get returns the trimmed value", () => {
    expect(sysctlGet("kernel.ostype")).toBe(readFileSync("/proc/sys/kernel/ostype", "utf8").trim());
  });

  test("a missing key is SyscallError ENOENT, or undefined/no-op with ignoreMissing", () => {
    let err: unknown;
    try {
      sysctlGet("net.ipv4.conf.no-such-if0.forwarding");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SyscallError);
    expect((err as SyscallError).errno).toBe(ENOENT);
    expect(sysctlGet("net.ipv4.conf.no-such-if0.forwarding", { ignoreMissing: true })).toBeUndefined();
    expect(() => sysctlSet("net.ipv4.conf.no-such-if0.forwarding", "1", { ignoreMissing: true })).not.toThrow();
  });

  test("set skips the write when the value is already there (works on a read-only key)", () => {
    const current = sysctlGet("kernel.ostype");
    expect(() => sysctlSet("kernel.ostype", current)).not.toThrow();
    expect(() => sysctlSet("kernel.ostype", `${current}\n`)).not.toThrow();
    expect(() => sysctlSet("kernel.ostype", "NotLinux")).toThrow(SyscallError);
  });
});

describe.skipIf(skipUnlessRoot("sysctl inside a network namespace"))("sysctl inside a network namespace", () => {
  let ns: ScratchNetns;
  beforeAll(() => {
    ns = createScratchNetns();
    using h = Handle.open(ns.ns);
    h.linkAddVeth({ name: "eth0.1", peerName: "p1" });
  });
  afterAll(() => {
    ns[Symbol.dispose]();
  });

  test("set and get per-netns keys from a withNetNS window, names with dots included", () => {
    withNetNS(ns.ns, () => {
      sysctlSet("net.ipv4.conf.eth0/1.forwarding", "1");
      sysctlSet("net.ipv4.ip_forward", "1");
    });
    expect(runIn(ns, ["cat", "/proc/sys/net/ipv4/conf/eth0.1/forwarding"]).trim()).toBe("1");
    expect(runIn(ns, ["cat", "/proc/sys/net/ipv4/ip_forward"]).trim()).toBe("1");
    expect(withNetNS(ns.ns, () => sysctlGet("net/ipv4/conf/eth0.1/forwarding"))).toBe("1");
    // The interface does not exist outside the namespace.
    expect(sysctlGet("net.ipv4.conf.eth0/1.forwarding", { ignoreMissing: true })).toBeUndefined();
    withNetNS(ns.ns, () => sysctlSet("net.ipv4.conf.eth0/1.forwarding", "0"));
    expect(runIn(ns, ["cat", "/proc/sys/net/ipv4/conf/eth0.1/forwarding"]).trim()).toBe("0");
  });
});
