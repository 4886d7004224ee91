/**
 * The only compile entry of the multi-call executable. It dispatches on the name it was invoked by,
 * the last path component of `process.argv0` (hard links and symlinks both keep it; `argv[0]` may
 * be rewritten by the runtime), falling back to the first field of /proc/self/cmdline. Under its
 * own name it lists the plugins it contains; `cni-plugins install --dest DIR` installs it
 * (build/install.ts).
 *
 * Start-up is most of a short plugin call (docs/performance.md), so this file imports only what
 * every call needs: node:fs and node:path are not loaded here, and VERSION is answered from the
 * registry without loading any plugin code.
 */
import { versionText } from "../shared/cni/version.ts";
import { mark, phasesReport } from "../shared/sys/phases.ts";
import { lookupPlugin, pluginEntry, pluginNames } from "./registry.ts";
import { buildVersion } from "./version.ts";

/** stdin/stdout (through libc), loaded after the VERSION answer. */
const stdio = () => import("../shared/cni/stdio.ts");

/** The last component of a path ("" for none); string methods only, no regular expression. */
function lastComponent(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  return path.slice(path.lastIndexOf("/", end - 1) + 1, end);
}

/** The name this process was started as. */
export function invokedName(): string {
  const fromArgv0 = process.argv0 ? lastComponent(process.argv0) : "";
  if (fromArgv0 !== "" && fromArgv0 !== "bun") return fromArgv0;
  try {
    const { readFileSync } = require("node:fs") as typeof import("node:fs");
    const first = readFileSync("/proc/self/cmdline", "utf8").split("\0")[0] ?? "";
    return lastComponent(first);
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
    `Find and collect what dead containers left behind: cni-plugins inspect | gc [--apply] (--help)\n`
  );
}

async function main(): Promise<number> {
  mark("entry");
  const name = invokedName();
  if (name === "dhcp" && process.argv[2] === "daemon") {
    // `dhcp daemon [flags]`: the long-running lease daemon (ipam/dhcp/daemon), as upstream.
    const daemon = require("../ipam/dhcp/daemon/main.ts") as typeof import("../ipam/dhcp/daemon/main.ts");
    return daemon.runDhcpDaemon(process.argv.slice(3), process.env);
  }
  const entry = pluginEntry(name);
  if (entry !== undefined && process.env.CNI_COMMAND === "VERSION") {
    // skel's answer to VERSION (which requires no other variable), without loading plugin code,
    // libc or node:fs. console.log writes synchronously and completely in Bun, also to an
    // O_NONBLOCK pipe, and supplies the answer's final newline.
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

main().then(
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
