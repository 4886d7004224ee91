import { describe, expect, test } from "bun:test";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";
import type { CmdArgs, Result } from "../../shared/cni/types.ts";
import { chainedMasterName, loadMacvlanConfig } from "./config.ts";

const own = { ifName: "net1", netns: "/run/netns/c" };

describe("chainedMasterName (#901)", () => {
  const prev: Result = {
    interfaces: [
      { name: "br0" },
      { name: "vethhost", mac: "0a:00:00:00:00:01" },
      { name: "eth0", sandbox: "/run/netns/c" },
      { name: "net1", sandbox: "/run/netns/c" },
    ],
    ips: [{ address: "10.0.0.2/24", interface: 2 }],
  };

  test("host side: the first named interface without a sandbox (none addressed there)", () => {
    expect(chainedMasterName(prev, false, own)).toBe("br0");
  });

  test("host side: an addressed interface wins over the first one", () => {
    expect(chainedMasterName({ ...prev, ips: [{ address: "10.0.0.1/24", interface: 1 }] }, false, own)).toBe("vethhost");
  });

  test("linkInContainer: the addressed interface in a sandbox", () => {
    expect(chainedMasterName(prev, true, own)).toBe("eth0");
  });

  test("never the attachment's own interface; nothing on the side: undefined", () => {
    const onlyOwn: Result = { interfaces: [{ name: "net1", sandbox: "/run/netns/c" }], ips: [{ address: "10.0.0.2/24", interface: 0 }] };
    expect(chainedMasterName(onlyOwn, true, own)).toBeUndefined();
    expect(chainedMasterName(onlyOwn, false, own)).toBeUndefined();
    expect(chainedMasterName(undefined, false, own)).toBeUndefined();
    expect(chainedMasterName({ interfaces: [{ name: "" }] }, false, own)).toBeUndefined();
  });

  test("an address pointing at a missing or other-side interface is ignored", () => {
    expect(chainedMasterName({ interfaces: [{ name: "eth0", sandbox: "/x" }, { name: "up0" }], ips: [{ address: "10.0.0.2/24", interface: 0 }, { address: "10.0.0.3/24", interface: 9 }] }, false, own)).toBe("up0");
  });
});

describe("loadMacvlanConfig", () => {
  const argsOf = (config: Record<string, unknown>, cniArgs = ""): CmdArgs =>
    withDelegate({ command: "DEL", containerID: "c1", netns: "", ifName: "eth0", args: cniArgs, path: "", stdinData: new Uint8Array(), config, cniVersion: "1.0.0", env: {}, stderr: () => {}, scope: PROCESS_SCOPE });
  const base = { cniVersion: "1.0.0", name: "n", type: "macvlan", master: "eth9", ipam: { type: "host-local" } };

  test("values that became invalid fail ADD but not a load for DEL, which still has the master and IPAM type", () => {
    const bad = argsOf({ ...base, mode: "bogus", mtu: -1, mac: "zz", prevResult: { cniVersion: "1.0.0", ips: "x" } }, "MAC");
    expect(() => loadMacvlanConfig(bad)).toThrow('unknown macvlan mode: "bogus"');
    expect(() => loadMacvlanConfig(argsOf({ ...base, mtu: -1 }))).toThrow("invalid MTU -1");
    expect(loadMacvlanConfig(bad, { forDel: true })).toMatchObject({ master: "eth9", ipamType: "host-local", mode: "bridge", mtu: -1, mac: undefined, prevResult: undefined });
  });

  test("a field of the wrong type fails a load for DEL too (code 7)", () => {
    expect(() => loadMacvlanConfig(argsOf({ ...base, mtu: "x" }), { forDel: true })).toThrow("failed to load netconf");
  });
});
