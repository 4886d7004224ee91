import { describe, expect, test } from "bun:test";
import { PLUGINS, pluginEntry, pluginNameOf, pluginNames } from "./registry.ts";

describe("registry", () => {
  test("every entry's versions are its spec's versions, and the spec's name is the CNI type", async () => {
    for (const name of pluginNames()) {
      const entry = PLUGINS[name]!;
      const spec = await entry.load();
      expect({ name, versions: [...entry.versions] }).toEqual({ name: spec.name, versions: [...spec.versions] });
    }
  });

  test("unknown and inherited names have no entry", () => {
    expect(pluginEntry("nope")).toBeUndefined();
    expect(pluginEntry("toString")).toBeUndefined();
  });
});

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
