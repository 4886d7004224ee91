/**
 * Everything the multi-call executable does after cli/entry.ts, which answers VERSION by itself:
 * it routes on the name the process was invoked by (the plugins; `cni-plugins` with `install`,
 * `inspect`, `gc`, `reload`, `serve` or nothing; `dhcp daemon`) and runs the call.
 *
 * A plugin call runs through registry/registry.ts `runPluginCall`, the same function the resident agent
 * (agent/, `cni-plugins serve`) runs its requests through; the agent serves only plugin calls
 * (everything else falls back to this executable).
 *
 * Start-up is most of a short plugin call (docs/performance.md), so this file imports only what
 * every call needs: node:fs and node:path are not loaded here, and a plugin's code is loaded only
 * for that plugin.
 */
import { mark, phasesReport } from "../shared/sys/phases.ts";
import { dhcpDaemon } from "../registry/dhcp-daemon.ts";
import { pluginEntry, pluginNameOf, pluginNames, pluginOwnerships, runPluginCall } from "../registry/registry.ts";
import { buildVersion } from "../registry/version.ts";
import { standaloneTelemetry } from "./standalone-telemetry.ts";

/** stdin/stdout (through libc), loaded when needed. */
const stdio = () => import("../shared/cni/stdio.ts");

/** What a call runs, from the name it was invoked by and its arguments (after argv[0]). */
export type Route =
  | { kind: "plugin"; name: string }
  | { kind: "dhcp-daemon"; args: string[] }
  | { kind: "install"; args: string[] }
  | { kind: "operator"; verb: "inspect" | "gc"; args: string[] }
  | { kind: "reload"; args: string[] }
  | { kind: "serve"; args: string[] }
  | { kind: "help"; name: string };

/** The route of a call by `name` (the last component of argv[0]) with `args` (argv[1..]). */
function routeOf(name: string, args: readonly string[]): Route {
  const [verb, ...rest] = args;
  if (name === "dhcp" && verb === "daemon") return { kind: "dhcp-daemon", args: rest };
  if (pluginEntry(name) !== undefined) return { kind: "plugin", name };
  if (name === "cni-plugins") {
    if (verb === "install") return { kind: "install", args: rest };
    if (verb === "inspect" || verb === "gc") return { kind: "operator", verb, args: rest };
    if (verb === "reload") return { kind: "reload", args: rest };
    if (verb === "serve") return { kind: "serve", args: rest };
  }
  return { kind: "help", name };
}

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
    `Put back firewall rules a firewall reload or flush removed: cni-plugins reload [--dry-run | --watch] (--help)\n` +
    `Serve plugin calls from a resident agent: cni-plugins serve [--socket PATH] (--help)\n`
  );
}

/** Runs the call; the exit status. `argv0Name`: the last component of argv0 (entry.ts). */
async function dispatch(argv0Name: string): Promise<number> {
  mark("entry");
  const route = routeOf(invokedName(argv0Name), process.argv.slice(2));
  switch (route.kind) {
    case "dhcp-daemon": {
      // `dhcp daemon [flags]`: the long-running lease daemon (ipam/dhcp/daemon), as upstream.
      const daemon = await dhcpDaemon.load();
      return daemon.runDhcpDaemon(route.args, process.env);
    }
    case "serve": {
      // `cni-plugins serve`: the resident agent (agent/, docs/resident.md).
      const agent = await import("../agent/serve.ts");
      return agent.runServeCommand(route.args, process.env, pluginNameOf);
    }
    default:
  }
  const { readAllSync, writeAllSync } = await stdio();
  const out = (t: string) => writeAllSync(1, t);
  const err = (t: string) => writeAllSync(2, t);
  switch (route.kind) {
    case "plugin": {
      (await import("../shared/netlink/netfilter-release.ts")).closeNetfilterSocketsAtExit();
      const telemetry = standaloneTelemetry(process.env);
      const status = await runPluginCall(
        route.name,
        {
          env: process.env,
          readStdin: () => readAllSync(0),
          stdout: (text) => {
            out(text);
            mark("result written");
          },
          stderr: err,
        },
        telemetry.host,
      );
      await telemetry.flush();
      return status;
    }
    case "install": {
      // `cni-plugins install --dest DIR`: the installer of deploy/daemonset.yaml (install.ts).
      const installer = require("./install.ts") as typeof import("./install.ts");
      return installer.runInstallCommand(route.args, pluginNames(), out, err);
    }
    case "operator": {
      // `cni-plugins inspect|gc`: the operator's view of stale attachments (operator/, docs/operator.md).
      const operator = await import("../operator/command.ts");
      return operator.runOperatorCommand(route.verb, route.args, await pluginOwnerships(), out, err);
    }
    case "reload": {
      // `cni-plugins reload [--dry-run|--watch]`: firewall state put back after flushes (operator/reload, docs/operator.md).
      const reload = await import("../operator/reload/command.ts");
      return reload.runReloadCommand(route.args, {
        stdout: out,
        stderr: err,
        env: process.env,
        plugins: pluginNames(),
        owners: await pluginOwnerships(),
        onStop: (fn) => {
          process.once("SIGTERM", fn);
          process.once("SIGINT", fn);
        },
      });
    }
    case "help":
      err(multiCallHelp(route.name));
      return route.name === "cni-plugins" ? 0 : 1;
  }
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
