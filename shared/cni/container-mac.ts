/** The MAC of a container link, from the config, CNI_ARGS and runtimeConfig (a bad one is code 7). */
import { invalidMacMessage, parseMacAddress } from "../ip/mac-address.ts";
import { parseCniArgsLenient } from "./args.ts";
import { InvalidConfigError } from "./errors.ts";
import type { CmdArgs } from "./types.ts";

/**
 * The MAC a container link gets, by upstream's precedence (config `mac` < CNI_ARGS `MAC` <
 * runtimeConfig `mac`; empty strings ignored), parsed and normalised; a bad MAC is code 7 naming it.
 */
export function resolveContainerMac(candidates: {
  config?: string | undefined;
  cniArgs?: string | undefined;
  runtimeConfig?: string | undefined;
}): string | undefined {
  let mac: string | undefined;
  for (const m of [candidates.config, candidates.cniArgs, candidates.runtimeConfig]) {
    if (m !== undefined && m !== "") mac = m;
  }
  if (mac === undefined) return undefined;
  const parsed = parseMacAddress(mac);
  if (parsed === undefined) throw new InvalidConfigError(`invalid args ${mac} for MAC addr: ${invalidMacMessage(mac)}`);
  return parsed;
}

/**
 * The MAC of a container link in plugins that upstream never let read CNI_ARGS (ptp, vlan; #492):
 * CNI_ARGS `MAC` < runtimeConfig `mac`. CNI_ARGS is read leniently (other keys ignored, no
 * `IgnoreUnknown` needed), so runtimes' extra args keep working as before.
 */
export function runtimeContainerMac(args: CmdArgs, runtimeConfigMac: string | undefined): string | undefined {
  return resolveContainerMac({ cniArgs: parseCniArgsLenient(args.args).MAC, runtimeConfig: runtimeConfigMac });
}
