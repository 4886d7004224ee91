/**
 * What an interface plugin passes on to its IPAM plugin (`ipam.type`) through its delegate
 * (CmdArgs.delegate), when the config has one ("" means none: L2 only, or chained): DEL as the first
 * step of its teardown, STATUS and GC. ADD and CHECK call the delegate themselves.
 */
import type { TeardownStep } from "../undo/teardown.ts";
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
      if (ipamType !== "") await args.delegate.run(ipamType, "DEL");
    },
  };
}

/** STATUS or GC of an interface plugin passed on to its IPAM plugin; nothing when the config has none. */
export async function delegateToIpam(ipamType: string, args: CmdArgs, command: "STATUS" | "GC"): Promise<void> {
  if (ipamType !== "") await args.delegate.run(ipamType, command);
}
