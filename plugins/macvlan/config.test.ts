import { describe, expect, test } from "bun:test";
import type { Result } from "../../shared/cni/types.ts";
import { chainedMasterName } from "./config.ts";

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
