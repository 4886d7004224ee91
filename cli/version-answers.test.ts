import { describe, expect, test } from "bun:test";
import { versionText } from "../shared/cni/version.ts";
import { PLUGINS, pluginNames } from "../registry/registry.ts";
import { versionAnswers } from "./version-answers.ts";

describe("version answers", () => {
  test("the VERSION answers inlined into entry.ts are each spec's own versionText, for every plugin and nothing else", async () => {
    const answers = versionAnswers();
    expect(Object.keys(answers).sort()).toEqual(pluginNames());
    for (const name of pluginNames()) {
      const spec = await PLUGINS[name]!.load();
      expect(`${answers[name]}\n`).toBe(versionText(spec.versions));
    }
  });
});
