/**
 * The registry of plugins this executable contains, as the entry registers it, for delegation's
 * in-process fast path. Kept apart from invoke.ts so registering costs no imports at start-up.
 */
import type { PluginSpec } from "./types.ts";

export type SpecLookup = (name: string) => PluginSpec | Promise<PluginSpec> | undefined;

let registered: { lookup: SpecLookup; buildVersion: string } | undefined;

/** Registers the plugins this executable contains, enabling the in-process fast path. */
export function enableInProcessDelegation(lookup: SpecLookup, buildVersion: string): void {
  registered = { lookup, buildVersion };
}

/** The registration, when the entry made one (undefined in tests and under `bun run`). */
export function inProcessPlugins(): { lookup: SpecLookup; buildVersion: string } | undefined {
  return registered;
}
