/**
 * `cni-plugins reload [--dry-run | --watch]` (docs/operator.md): one pass (pass.ts), printed, or
 * the watcher (watch.ts) until SIGTERM/SIGINT. A thin wrapper: everything it does is done by
 * those modules, with the node's dependencies (system.ts).
 *
 * Exit status: 0; 1 when something could not be restored (one pass) or when the watcher cannot
 * work at all; 2 for a usage error.
 */
import { readFileSync } from "node:fs";
import { systemBusAddress } from "../../shared/dbus/system-bus.ts";
import { messageOf } from "../../shared/error/annotate.ts";
import { parseFlags, USAGE, UsageError, type OperatorFlags } from "../flags.ts";
import { formatReloadReport } from "./format.ts";
import { passStatus, reloadPass, type ReloadOptions, type ReloadReport } from "./pass.ts";
import type { PluginOwnerships } from "../../shared/node-state/ownership.ts";
import { systemReloadDeps, systemReloadWatchDeps } from "./system.ts";
import { DEFAULT_DEBOUNCE_MS, startReloadWatch, type ReloadWatchSinks } from "./watch.ts";

export interface ReloadCommandIO {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The process environment (DBUS_SYSTEM_BUS_ADDRESS; handed to the plugins' code as theirs). */
  env: Readonly<Record<string, string | undefined>>;
  /** The CNI types of this build. */
  plugins: readonly string[];
  /** What they own beyond a call (the registry's descriptions), by CNI type. */
  owners: PluginOwnerships;
  /** Registers what stops the watcher (SIGTERM, SIGINT). */
  onStop(fn: () => void): void;
}

/** True when a watcher should print the pass: something restored or failed, or a cache file newly unusable. */
function worthTelling(r: ReloadReport, seenProblems: Set<string>): boolean {
  const fresh = r.problems.filter((p) => !seenProblems.has(p));
  for (const p of fresh) seenProblems.add(p);
  return fresh.length > 0 || r.attachments.some((a) => a.state === "restored" || a.state === "failed");
}

function watchSinks(flags: OperatorFlags, io: ReloadCommandIO): ReloadWatchSinks {
  const seen = new Set<string>();
  return {
    pass(report, why) {
      if (!worthTelling(report, seen) && why !== "start") return;
      io.stdout(flags.json ? `${JSON.stringify({ trigger: why, at: new Date().toISOString(), ...report })}\n` : formatReloadReport(report, { changesOnly: true, heading: why }));
    },
    log: (line) => io.stderr(`cni-plugins reload: ${line}\n`),
  };
}

/** `cni-plugins reload ARGS`: parses, runs, prints; the exit status. */
export async function runReloadCommand(argv: readonly string[], io: ReloadCommandIO): Promise<number> {
  let flags: OperatorFlags;
  try {
    flags = parseFlags("reload", argv, (p) => readFileSync(p === "-" ? 0 : p, "utf8"), "");
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message !== "") io.stderr(`cni-plugins reload: ${err.message}\n`);
    io.stderr(USAGE);
    return err.message === "" ? 0 : 2;
  }
  const reload: Omit<ReloadOptions, "dryRun"> = { cacheDir: flags.cacheDir, networks: flags.networks, valid: flags.valid, env: io.env, stderr: io.stderr };
  if (!flags.watch) {
    let report: ReloadReport;
    try {
      report = await reloadPass({ ...reload, dryRun: flags.dryRun }, systemReloadDeps(flags.confDir, io.plugins, io.owners));
    } catch (err) {
      io.stderr(`cni-plugins reload: ${messageOf(err)}\n`);
      return 1;
    }
    io.stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReloadReport(report));
    return passStatus(report);
  }
  const stop = new AbortController();
  io.onStop(() => stop.abort());
  const watch = startReloadWatch(
    { reload, busAddress: systemBusAddress(io.env), intervalMs: flags.intervalMs, debounceMs: DEFAULT_DEBOUNCE_MS },
    watchSinks(flags, io),
    stop.signal,
    systemReloadWatchDeps(flags.confDir, io.plugins, io.owners),
  );
  return watch.done;
}
