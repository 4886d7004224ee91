/**
 * Everything the multi-call executable does after build/entry.ts, which answers VERSION by itself:
 * it dispatches on the name the process was invoked by (the plugins; `cni-plugins` with `install`,
 * `inspect`, `gc`, `reload` or nothing; `dhcp daemon`).
 *
 * Start-up is most of a short plugin call (docs/performance.md), so this file imports only what
 * every call needs: node:fs and node:path are not loaded here, and a plugin's code is loaded only
 * for that plugin.
 */
import { versionText } from "../shared/cni/version.ts";
import { mark, phasesReport } from "../shared/sys/phases.ts";
import { lookupPlugin, pluginEntry, pluginNames } from "./registry.ts";
import { buildVersion } from "./version.ts";

/** stdin/stdout (through libc), loaded when needed. */
const stdio = () => import("../shared/cni/stdio.ts");

/** The name this process was started as: `fromArgv0` (entry.ts), else from /proc/self/cmdline. */
function invokedName(fromArgv0: string): string {
  if (fromArgv0 !== "" && fromArgv0 !== "bun") return fromArgv0;
  try {
    const { readFileSync } = require("node:fs") as typeof import("node:fs");
    // The kernel's copy of argv[0]: a path as exec'd, never ending in "/".
    const first = readFileSync("/proc/self/cmdline", "utf8").split("\0")[0] ?? "";
    return first.slice(first.lastIndexOf("/") + 1);
  } catch {
    return fromArgv0;
  }
}

function multiCallHelp(name: string): string {
  return (
    `${name}: CNI reference plugins (TypeScript) ${buildVersion()}\n` +
    `Run through a link named after a plugin. Plugins in this build:\n` +
    pluginNames().map((p) => `  ${p}\n`).join("") +
    `Install into a CNI bin directory: cni-plugins install --dest /opt/cni/bin\n` +
    `Find and collect what dead containers left behind: cni-plugins inspect | gc [--apply] (--help)\n` +
    `Put back firewall rules a firewall reload or flush removed: cni-plugins reload [--dry-run | --watch] (--help)\n`
  );
}

/** Runs the call; the exit status. `argv0Name`: the last component of argv0 (entry.ts). */
async function dispatch(argv0Name: string): Promise<number> {
  mark("entry");
  const name = invokedName(argv0Name);
  if (name === "dhcp" && process.argv[2] === "daemon") {
    // `dhcp daemon [flags]`: the long-running lease daemon (ipam/dhcp/daemon), as upstream.
    const daemon = require("../ipam/dhcp/daemon/main.ts") as typeof import("../ipam/dhcp/daemon/main.ts");
    return daemon.runDhcpDaemon(process.argv.slice(3), process.env);
  }
  const entry = pluginEntry(name);
  if (entry !== undefined && process.env.CNI_COMMAND === "VERSION") {
    // Only when entry.ts could not tell the name from argv0: skel's answer, from the registry.
    console.log(versionText(entry.versions).slice(0, -1));
    return 0;
  }
  const { readAllSync, writeAllSync } = await stdio();
  if (name === "cni-plugins" && process.argv[2] === "install") {
    // `cni-plugins install --dest DIR`: the installer of deploy/daemonset.yaml (build/install.ts).
    const installer = require("./install.ts") as typeof import("./install.ts");
    return installer.runInstallCommand(process.argv.slice(3), pluginNames(), (t) => writeAllSync(1, t), (t) => writeAllSync(2, t));
  }
  const verb = process.argv[2];
  if (name === "cni-plugins" && verb === "reload") {
    // `cni-plugins reload [--dry-run|--watch]`: firewall state put back after flushes (operator/reload, docs/operator.md).
    const reload = await import("../operator/reload/command.ts");
    return reload.runReloadCommand(process.argv.slice(3), {
      stdout: (t) => writeAllSync(1, t),
      stderr: (t) => writeAllSync(2, t),
      env: process.env,
      plugins: pluginNames(),
      onStop: (fn) => {
        process.once("SIGTERM", fn);
        process.once("SIGINT", fn);
      },
    });
  }
  if (name === "cni-plugins" && (verb === "inspect" || verb === "gc")) {
    // `cni-plugins inspect|gc`: the operator's view of stale attachments (operator/, docs/operator.md).
    const operator = await import("../operator/command.ts");
    return operator.runOperatorCommand(verb, process.argv.slice(3), (t) => writeAllSync(1, t), (t) => writeAllSync(2, t));
  }
  if (entry === undefined) {
    writeAllSync(2, multiCallHelp(name));
    return name === "cni-plugins" ? 0 : 1;
  }
  const [spec, skel, inProcess] = await Promise.all([
    entry.load(),
    import("../shared/cni/skel.ts"),
    import("../shared/cni/in-process.ts"),
  ]);
  mark("plugin loaded");
  inProcess.enableInProcessDelegation(lookupPlugin, buildVersion());
  return skel.runPlugin(
    spec,
    {
      env: process.env,
      readStdin: () => readAllSync(0),
      stdout: (text) => {
        writeAllSync(1, text);
        mark("result written");
      },
      stderr: (text) => writeAllSync(2, text),
    },
    buildVersion(),
  );
}

/** Runs the call and exits with its status (an unexpected exception: status 2, its stack on stderr). */
export function run(argv0Name: string): void {
  dispatch(argv0Name).then(
    async (code) => {
      const phases = phasesReport();
      if (phases !== "") (await stdio()).writeAllSync(2, phases);
      process.exit(code);
    },
    async (err: unknown) => {
      (await stdio()).writeAllSync(2, `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(2);
    },
  );
}
