/**
 * What host-local keeps on the node (the registry's description, shared/node-state/ownership.ts):
 * a reservation file per address, `<dataDir>/<network>/<ip>`, whose content is
 * `<containerID>\r\n<ifName>`.
 */
import { parseIP, formatIP } from "../../shared/ip/addr.ts";
import { namesIn } from "../../shared/node-state/network-state.ts";
import { ipamOf, type PluginOwnership } from "../../shared/node-state/ownership.ts";
import { absolutePath, joinPath } from "../../shared/sys/file.ts";
import { DEFAULT_DATA_DIR } from "./store/disk.ts";

export const hostLocalOwnership: PluginOwnership = {
  state: {
    phase: "discover",
    read(st, plugins, r) {
      const dataDirs = plugins.map((p) => ipamOf(p)?.dataDir);
      const roots = new Set(dataDirs.map((d) => absolutePath(typeof d === "string" && d !== "" ? d : DEFAULT_DATA_DIR)));
      for (const root of roots) {
        const dir = joinPath(root, st.network.name);
        st.read(`host-local ${dir}`, () => {
          for (const n of namesIn(r, dir)) {
            const ip = parseIP(n);
            if (ip === null) continue; // lock, last_reserved_ip.N, the owner index, temporary files
            const file = joinPath(dir, n);
            const [containerID = "", ifName = ""] = r.readFile(file).split(/\r?\n/).map((s) => s.trim());
            const a = st.attachment(containerID, ifName);
            a.holdings.push({ kind: "host-local", what: file });
            a.addresses.add(formatIP(ip));
          }
        });
      }
    },
  },
};
