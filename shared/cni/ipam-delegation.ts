/**
 * What an interface plugin passes on to its IPAM plugin (`ipam.type`) when the config has one (""
 * means none: L2 only, or chained): DEL, as the first step of its teardown.
 */
import type { TeardownStep } from "../undo/teardown.ts";
import { delegate } from "./invoke.ts";
import type { CmdArgs } from "./types.ts";

/** Name of the {@link ipamStep}. */
export const IPAM_STEP = "IPAM";

/**
 * IPAM DEL (nothing when `ipamType` is ""): the first step of every plugin that delegates to IPAM,
 * so a dhcp lease is released while the container link still exists.
 */
export function ipamStep(ipamType: string, args: CmdArgs): TeardownStep {
  return {
    name: IPAM_STEP,
    run: async () => {
      if (ipamType !== "") await delegate(ipamType, args, "DEL");
    },
  };
}
