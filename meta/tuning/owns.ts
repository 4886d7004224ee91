/**
 * What tuning keeps (the registry's description, shared/node-state/ownership.ts): a backup of the
 * settings it changed, `<dataDir>/<containerID>_<ifName>.json`. The file names no network, so only
 * attachments another place named are matched.
 */
import { namesIn } from "../../shared/node-state/network-state.ts";
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { joinPath } from "../../shared/sys/file.ts";
import { DEFAULT_DATA_DIR } from "./config.ts";

export const tuningOwnership: PluginOwnership = {
  state: {
    phase: "match",
    read(st, plugins, r) {
      const dirs = new Set(plugins.map((p) => (typeof p.dataDir === "string" && p.dataDir !== "" ? p.dataDir : DEFAULT_DATA_DIR)));
      for (const dir of dirs) {
        st.read(`tuning backups ${dir}`, () => {
          const names = new Set(namesIn(r, dir));
          for (const a of st.attachments.values()) {
            const name = `${a.containerID}_${a.ifName}.json`;
            if (a.ifName !== "" && names.has(name)) a.holdings.push({ kind: "tuning", what: joinPath(dir, name) });
          }
        });
      }
    },
  },
};
