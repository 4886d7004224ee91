/**
 * A bundle-time macro (imported `with { type: "macro" }` by cli/entry.ts): each plugin's answer
 * to VERSION, computed by the one formatter (shared/cni/version.ts versionText) from the registry
 * when the executable is built, and inlined into the entry module as a constant. VERSION, the most
 * frequent call, then loads no other module (docs/performance.md).
 */
import { versionText } from "../shared/cni/version.ts";
import { PLUGINS } from "../registry/registry.ts";

/** Plugin name → its VERSION answer, one line without the final newline. */
export function versionAnswers(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, entry] of Object.entries(PLUGINS)) out[name] = versionText(entry.versions).slice(0, -1);
  return out;
}
