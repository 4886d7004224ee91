/**
 * What bandwidth keeps (the registry's description, shared/node-state/ownership.ts): an IFB per
 * attachment with ingress shaping, whose alias names its owner (ifb-name.ts).
 */
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { ifbAttachment } from "./ifb-name.ts";

export const bandwidthOwnership: PluginOwnership = {
  state: {
    phase: "discover",
    read(st, _plugins, r) {
      st.read("bandwidth IFBs", () => {
        for (const ifb of r.links("ifb")) {
          const owner = ifbAttachment(ifb, st.network.name);
          if (owner !== undefined) st.attachment(owner.containerID, owner.ifName).holdings.push({ kind: "ifb", what: `link ${ifb.name}` });
        }
      });
    },
  },
};
