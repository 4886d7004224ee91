/** Prints the CNI type names this build links, one per line (used by the Makefile). */
import { pluginNames } from "../registry/registry.ts";

for (const name of pluginNames()) console.log(name);
