import { describe, expect, test } from "bun:test";
import { pluginNameOf } from "./run.ts";

describe("pluginNameOf", () => {
  test("the last component of argv[0], when it names a plugin of this build", () => {
    expect(pluginNameOf(["/opt/cni/bin/bridge"])).toBe("bridge");
    expect(pluginNameOf(["loopback", "x"])).toBe("loopback");
    expect(pluginNameOf(["/opt/cni/bin/dhcp"])).toBe("dhcp");
  });

  test("no plugin: the multi-call name, the dhcp daemon, unknown or inherited names, no argv", () => {
    expect(pluginNameOf(["/opt/cni/bin/cni-plugins", "gc"])).toBeUndefined();
    expect(pluginNameOf(["/opt/cni/bin/dhcp", "daemon"])).toBeUndefined();
    expect(pluginNameOf(["/opt/cni/bin/toString"])).toBeUndefined();
    expect(pluginNameOf(["/opt/cni/bin/bridge/"])).toBeUndefined();
    expect(pluginNameOf([])).toBeUndefined();
  });
});
