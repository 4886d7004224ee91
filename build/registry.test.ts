import { describe, expect, test } from "bun:test";
import { versionText } from "../shared/cni/version.ts";
import { PLUGINS, pluginEntry, pluginNames } from "./registry.ts";
import { versionAnswers } from "./version-answers.ts";

describe("registry", () => {
  test("every entry's versions are its spec's versions, and the spec's name is the CNI type", async () => {
    for (const name of pluginNames()) {
      const entry = PLUGINS[name]!;
      const spec = await entry.load();
      expect({ name, versions: [...entry.versions] }).toEqual({ name: spec.name, versions: [...spec.versions] });
    }
  });

  test("the VERSION answers inlined into entry.ts are each spec's own versionText, for every plugin and nothing else", async () => {
    const answers = versionAnswers();
    expect(Object.keys(answers).sort()).toEqual(pluginNames());
    for (const name of pluginNames()) {
      const spec = await PLUGINS[name]!.load();
      expect(`${answers[name]}\n`).toBe(versionText(spec.versions));
    }
  });

  test("unknown and inherited names have no entry", () => {
    expect(pluginEntry("nope")).toBeUndefined();
    expect(pluginEntry("toString")).toBeUndefined();
  });
});
