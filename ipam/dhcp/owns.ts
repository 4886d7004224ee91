/**
 * What the dhcp plugin keeps (the registry's description, shared/node-state/ownership.ts): the
 * daemon's lease files in its default lease directory, each naming its attachment (key
 * `<containerID>/<network>/<ifName>`) and the netns it was acquired for.
 */
import { namesIn } from "../../shared/node-state/network-state.ts";
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { joinPath } from "../../shared/sys/file.ts";
import { DEFAULT_LEASE_DIR } from "./daemon/flags.ts";

export const dhcpOwnership: PluginOwnership = {
  state: {
    phase: "discover",
    read(st, _plugins, r) {
      st.read(`dhcp leases ${DEFAULT_LEASE_DIR}`, () => {
        for (const n of namesIn(r, DEFAULT_LEASE_DIR).filter((n) => n.endsWith(".json"))) {
          const file = joinPath(DEFAULT_LEASE_DIR, n);
          const l = JSON.parse(r.readFile(file)) as { key?: unknown; containerID?: unknown; ifName?: unknown; netns?: unknown };
          if (typeof l.key !== "string" || typeof l.containerID !== "string" || typeof l.ifName !== "string") continue;
          if (l.key !== `${l.containerID}/${st.network.name}/${l.ifName}`) continue;
          const a = st.attachment(l.containerID, l.ifName);
          a.holdings.push({ kind: "dhcp", what: file });
          if (typeof l.netns === "string" && l.netns !== "") a.netns.add(l.netns);
        }
      });
    },
  },
};
