import { describe, expect, test } from "bun:test";
import { PLUGINS, pluginEntry, pluginNames } from "./registry.ts";

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
