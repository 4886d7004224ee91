/**
 * The only compile entry of the multi-call executable. It dispatches on the name it was invoked by,
 * `basename(process.argv0)` (hard links and symlinks both keep it; argv[0] does not — see
 * platform.md §4), falling back to the first field of /proc/self/cmdline. Under its own name it
 * lists the plugins it contains; `cni-plugins install --dest DIR` installs it (build/install.ts).
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { enableInProcessDelegation } from "../shared/cni/in-process.ts";
import { runPlugin } from "../shared/cni/skel.ts";
import { readAllSync, writeAllSync } from "../shared/cni/stdio.ts";
import { lookupPlugin, pluginNames } from "./registry.ts";
import { buildVersion } from "./version.ts";

/** The name this process was started as. */
export function invokedName(): string {
  const fromArgv0 = process.argv0 ? basename(process.argv0) : "";
  if (fromArgv0 !== "" && fromArgv0 !== "bun") return fromArgv0;
  try {
    const first = readFileSync("/proc/self/cmdline", "utf8").split("\0")[0] ?? "";
    return basename(first);
  } catch {
    return fromArgv0;
  }
}

function multiCallHelp(name: string): string {
  return (
    `${name}: CNI reference plugins (TypeScript) ${buildVersion()}\n` +
    `Run through a link named after a plugin. Plugins in this build:\n` +
    pluginNames().map((p) => `  ${p}\n`).join("") +
    `Install into a CNI bin directory: cni-plugins install --dest /opt/cni/bin\n`
  );
}

async function main(): Promise<number> {
  const name = invokedName();
  if (name === "dhcp" && process.argv[2] === "daemon") {
    // `dhcp daemon [flags]`: the long-running lease daemon (ipam/dhcp/daemon), as upstream.
    const daemon = require("../ipam/dhcp/daemon/main.ts") as typeof import("../ipam/dhcp/daemon/main.ts");
    return daemon.runDhcpDaemon(process.argv.slice(3), process.env);
  }
  if (name === "cni-plugins" && process.argv[2] === "install") {
    // `cni-plugins install --dest DIR`: the installer of deploy/daemonset.yaml (build/install.ts).
    const installer = require("./install.ts") as typeof import("./install.ts");
    return installer.runInstallCommand(process.argv.slice(3), pluginNames(), (t) => writeAllSync(1, t), (t) => writeAllSync(2, t));
  }
  const spec = await lookupPlugin(name);
  if (!spec) {
    writeAllSync(2, multiCallHelp(name));
    return name === "cni-plugins" ? 0 : 1;
  }
  enableInProcessDelegation(lookupPlugin, buildVersion());
  return runPlugin(
    spec,
    {
      env: process.env,
      readStdin: () => readAllSync(0),
      stdout: (text) => writeAllSync(1, text),
      stderr: (text) => writeAllSync(2, text),
    },
    buildVersion(),
  );
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    writeAllSync(2, `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
