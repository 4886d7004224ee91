/**
 * The iptables backend as the firewall helpers see it: read one table (iptables-save) and apply
 * one transaction (iptables-restore --noflush --wait), per IP family. {@link systemIptables} talks
 * to the host through the detected variant (variant.ts); fake.ts is the in-memory twin for tests.
 */
import { readFileSync } from "node:fs";
import type { IPFamily } from "../../ip/ip.ts";
import { CommandNotFoundError, findExecutable, runCommand } from "../exec.ts";
import { parseSave, type SavedTable } from "./save-format.ts";
import { detectIptablesMode, toolsFor, type IptablesMode, type VariantProbe } from "./variant.ts";

export interface IptablesDriver {
  /** False when no iptables tools are installed (the backend is unusable). */
  available(): boolean;
  /** The table as stored now; undefined when it does not exist (reading never creates it). */
  readTable(family: IPFamily, table: string): SavedTable | undefined;
  /** Applies one restore transaction (`*table … COMMIT`) without flushing anything else. */
  restore(family: IPFamily, text: string): void;
}

/** Names of the legacy (x_tables) tables that exist in the current netns. */
function legacyTableNames(family: IPFamily): string[] {
  try {
    const text = readFileSync(family === 6 ? "/proc/net/ip6_tables_names" : "/proc/net/ip_tables_names", "utf8");
    return text.split("\n").filter((s) => s !== "");
  } catch {
    return [];
  }
}

const hostProbe: VariantProbe = {
  exists: (tool) => findExecutable(tool) !== undefined,
  save: (tool, args) => {
    try {
      return runCommand([tool, ...args], { allowFailure: true }).stdout;
    } catch {
      return "";
    }
  },
  legacyTables: legacyTableNames,
};

let cachedMode: IptablesMode | undefined | null = null;

/** The host's iptables variant, detected once per process. */
export function hostIptablesMode(): IptablesMode | undefined {
  if (cachedMode === null) cachedMode = detectIptablesMode(hostProbe);
  return cachedMode;
}

/** Forgets the cached detection (tests that change the host's rules between checks). */
export function resetIptablesModeCache(): void {
  cachedMode = null;
}

/**
 * The real host iptables, through `mode` or (by default) the variant {@link hostIptablesMode}
 * picks on first use.
 */
export function systemIptables(mode?: IptablesMode): IptablesDriver {
  const currentMode = (): IptablesMode | undefined => mode ?? hostIptablesMode();
  const tools = (family: IPFamily): { save: string; restore: string } => {
    const m = currentMode();
    if (m === undefined) throw new CommandNotFoundError(family === 6 ? "ip6tables" : "iptables");
    return toolsFor(m, family);
  };
  return {
    available: () => currentMode() !== undefined,
    readTable(family, table) {
      if (currentMode() === "legacy" && !legacyTableNames(family).includes(table)) return undefined;
      const out = runCommand([tools(family).save, "-t", table]).stdout;
      return parseSave(out).get(table);
    },
    restore(family, text) {
      runCommand([tools(family).restore, "--noflush", "--wait"], { input: text });
    },
  };
}
