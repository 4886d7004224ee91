/**
 * The spec's GC for one network (libcni `GCNetworkList`): every plugin of the list, in order, gets
 * `CNI_COMMAND=GC` with its own config plus the list's `name` and `cniVersion` and the live
 * attachments under both `cni.dev/valid-attachments` and the older `cni.dev/attachments`, as libcni
 * sends them (cni#1101, #1103), so a plugin reading either key gets them. A failing plugin does not
 * stop the others; every failure is returned.
 * GC exists from spec 1.1.0: an older list is sent as 1.1.0 (the plugins of this suite accept every
 * version; a plugin that does not know GC answers with an error, which is reported).
 */
import { withDelegate } from "../shared/cni/delegate.ts";
import { GC_ATTACHMENT_KEYS } from "../shared/cni/netconf.ts";
import { versionGte } from "../shared/cni/version.ts";
import type { NetworkList } from "./networks.ts";
import { PROCESS_SCOPE } from "../shared/cni/call-scope.ts";

export interface GcAttachment {
  containerID: string;
  ifname: string;
}

export interface GcCall {
  plugin: string;
  /** undefined on success. */
  error?: string;
}

/** The config bytes one plugin gets. */
export function gcConfig(net: NetworkList, plugin: Record<string, unknown>, valid: readonly GcAttachment[]): Record<string, unknown> {
  const cniVersion = versionGte(net.cniVersion, "1.1.0") ? net.cniVersion : "1.1.0";
  const lists = Object.fromEntries(GC_ATTACHMENT_KEYS.map((key) => [key, valid]));
  return { ...plugin, name: net.name, cniVersion, ...lists };
}

/** Runs GC through the list; `binDirs` is CNI_PATH. */
export async function runGc(net: NetworkList, valid: readonly GcAttachment[], binDirs: string): Promise<GcCall[]> {
  const calls: GcCall[] = [];
  for (const plugin of net.plugins) {
    const type = String(plugin.type);
    const config = gcConfig(net, plugin, valid);
    const env = { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", CNI_COMMAND: "GC", CNI_PATH: binDirs };
    const args = withDelegate({
      command: "GC",
      containerID: "",
      netns: "",
      ifName: "",
      args: "",
      path: binDirs,
      stdinData: new TextEncoder().encode(JSON.stringify(config)),
      config,
      cniVersion: String(config.cniVersion),
      env,
      // The command's own process: a plugin's diagnostics go to its stderr.
      stderr: (text) => void process.stderr.write(text),
      scope: PROCESS_SCOPE,
    });
    try {
      await args.delegate.run(type, "GC");
      calls.push({ plugin: type });
    } catch (err) {
      calls.push({ plugin: type, error: (err as Error).message });
    }
  }
  return calls;
}
