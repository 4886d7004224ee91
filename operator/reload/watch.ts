/**
 * `cni-plugins reload --watch` as a module a resident process can host: it takes its options, its
 * output sinks and an AbortSignal, reads no process state and never exits the process. The
 * command (command.ts) is a thin wrapper around it.
 *
 * A pass (pass.ts) runs at start (rules may have been flushed before the watcher started), then
 * after each change the sources report, a short quiet time ({@link ReloadWatchOptions.debounceMs})
 * after the first, so that a burst (a whole ruleset flushed) makes one pass:
 * - nf_tables notifications (nftables-events.ts): a table, chain or rule deleted where the plugins
 *   write — iptables-nft and our nftables backends;
 * - firewalld on D-Bus (firewalld-events.ts): `Reloaded`, and firewalld (re)started;
 * - a periodic check ({@link ReloadWatchOptions.intervalMs}, 60 s by default): iptables-legacy has
 *   no notifications at all, so this is how its flushes are found; on other hosts it is the safety
 *   net for anything missed. A pass that finds everything in place reads each table once and
 *   writes nothing.
 *
 * A pass writes only what its checks found missing and then checks it again, so the notifications
 * of its own writes lead to at most one more pass, which writes nothing. Should something keep
 * removing the same rules within seconds (another agent fighting over them), passes that restore
 * the same parts again are spaced out further each time (up to a minute) and that is reported;
 * attachments that could not be restored are retried with a growing delay.
 */
import { messageOf } from "../../shared/error/annotate.ts";
import type { IptablesMode } from "../../shared/firewall/iptables/variant.ts";
import { untilAborted } from "./firewalld-events.ts";
import { NFTABLES_REASON } from "./nftables-events.ts";
import type { ReloadOptions, ReloadReport } from "./pass.ts";

export interface ReloadWatchOptions {
  /** What each pass reads (a watcher always writes: no dry run). */
  reload: Omit<ReloadOptions, "dryRun">;
  /** The D-Bus system bus firewalld is on (DBUS_SYSTEM_BUS_ADDRESS, else the default socket). */
  busAddress: string;
  /** Period of the check that runs whatever the notifications say (ms); 0: none. */
  intervalMs: number;
  /** Quiet time between a change and its pass (ms). */
  debounceMs: number;
}

export const DEFAULT_INTERVAL_MS = 60_000;
export const DEFAULT_DEBOUNCE_MS = 150;
/** The longest delay between passes that keep restoring the same parts, and between retries of failures. */
const MAX_BACKOFF_MS = 60_000;
/**
 * Passes caused by nf_tables notifications alone that restore some of the same parts as the
 * restoring pass before, less than {@link FIGHT_WINDOW_MS} after it, are counted; from the
 * {@link FIGHT_STREAK}th on, the next pass waits (1 s, doubling): something is fighting over the
 * rules, deleting them as soon as they are back. A pass that firewalld's signals (or anything but
 * those notifications) caused ends the count: firewalld reloading or restarting is no fight, though a
 * restart alone flushes twice (on its way down and up).
 */
const FIGHT_WINDOW_MS = 10_000;
const FIGHT_STREAK = 4;

export interface ReloadWatchSinks {
  /** Each pass's report and what caused it. */
  pass(report: ReloadReport, why: string): void;
  /** The watcher's own news: what it watches, sources lost and found, backing off, giving up. */
  log(line: string): void;
}

/** What the watcher runs on: the system's (system.ts) or fakes. */
export interface ReloadWatchDeps {
  pass(opts: ReloadOptions): Promise<ReloadReport>;
  watchNftables(onChange: (why: string) => void, log: (line: string) => void, signal: AbortSignal): { started: boolean; stopped: Promise<void> };
  watchFirewalld(address: string, onChange: (why: string) => void, log: (line: string) => void, signal: AbortSignal): Promise<void>;
  iptablesMode(env: ReloadOptions["env"]): IptablesMode | undefined;
}

export interface ReloadWatch {
  /** The exit status once stopped: 0 after `signal` aborted, 1 when it could not work at all. */
  readonly done: Promise<number>;
  /** Asks for a pass (a host process may have reasons of its own). */
  trigger(why: string): void;
}

/** `<cache file>\n<part>` of every restored part. */
function restoredParts(r: ReloadReport): Set<string> {
  return new Set(r.attachments.flatMap((a) => a.parts.filter((p) => p.state === "restored").map((p) => `${a.cache}\n${p.what}`)));
}

/** Starts watching (see module doc) until `signal` aborts. */
export function startReloadWatch(opts: ReloadWatchOptions, sinks: ReloadWatchSinks, signal: AbortSignal, deps: ReloadWatchDeps): ReloadWatch {
  const pending = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let started = false;
  /** No pass starts before this time (backing off). */
  let notBefore = 0;
  let lastRestored = new Set<string>();
  let lastRestoredAt = 0;
  let streak = 0;
  let failDelay = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const trigger = (why: string): void => {
    if (signal.aborted) return;
    pending.add(why);
    if (started && running === undefined) arm();
  };

  const arm = (): void => {
    if (timer !== undefined || signal.aborted) return;
    timer = setTimeout(() => void fire(), Math.max(opts.debounceMs, notBefore - Date.now()));
  };

  const afterPass = (report: ReloadReport, why: string): void => {
    const restored = restoredParts(report);
    const now = Date.now();
    const notifiedOnly = why.split("; ").every((w) => w.startsWith(NFTABLES_REASON));
    if (restored.size > 0) {
      const again = notifiedOnly && now - lastRestoredAt < FIGHT_WINDOW_MS && [...restored].some((k) => lastRestored.has(k));
      streak = again ? streak + 1 : 0;
      lastRestored = restored;
      lastRestoredAt = now;
    } else if (now - lastRestoredAt >= FIGHT_WINDOW_MS) streak = 0;
    notBefore = streak < FIGHT_STREAK ? 0 : now + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (streak - FIGHT_STREAK));
    if (streak >= FIGHT_STREAK && restored.size > 0) {
      sinks.log(`the same rules had to be restored ${streak + 1} times within seconds: something keeps removing them; the next pass waits ${Math.round((notBefore - now) / 1000)} s`);
    }
    const failed = report.attachments.some((a) => a.state === "failed");
    failDelay = failed ? Math.min(MAX_BACKOFF_MS, failDelay === 0 ? 1000 : failDelay * 2) : 0;
    if (failed && retry === undefined) {
      retry = setTimeout(() => {
        retry = undefined;
        trigger("retrying what could not be restored");
      }, failDelay);
    }
  };

  const fire = async (): Promise<void> => {
    timer = undefined;
    if (signal.aborted || pending.size === 0) return;
    const why = [...pending].join("; ");
    pending.clear();
    running = (async () => {
      try {
        const report = await deps.pass({ ...opts.reload, dryRun: false });
        sinks.pass(report, why);
        afterPass(report, why);
      } catch (err) {
        sinks.log(`reload pass (${why}) failed: ${messageOf(err)}`);
        failDelay = Math.min(MAX_BACKOFF_MS, failDelay === 0 ? 1000 : failDelay * 2);
        notBefore = Date.now() + failDelay;
        pending.add("retrying after a failed pass");
      }
    })();
    await running;
    running = undefined;
    if (pending.size > 0) arm();
  };

  const done = (async (): Promise<number> => {
    try {
      const report = await deps.pass({ ...opts.reload, dryRun: false });
      sinks.pass(report, "start");
      afterPass(report, "start");
    } catch (err) {
      sinks.log(`cannot work: ${messageOf(err)}`);
      return 1;
    }
    const mode = deps.iptablesMode(opts.reload.env);
    const nft = deps.watchNftables(trigger, sinks.log, signal);
    const periodic = opts.intervalMs > 0 ? setInterval(() => trigger("periodic check"), opts.intervalMs) : undefined;
    const how = [
      nft.started ? "nf_tables notifications" : undefined,
      "firewalld on D-Bus",
      periodic !== undefined ? `a check every ${opts.intervalMs / 1000} s${mode === "legacy" ? " (iptables-legacy has no notifications)" : ""}` : undefined,
    ].filter((x) => x !== undefined);
    sinks.log(`watching (iptables ${mode ?? "not installed"}): ${how.join(", ")}`);
    if (!nft.started && periodic === undefined) sinks.log("warning: without nf_tables notifications and without a periodic check, only firewalld reloads are noticed");
    const firewalld = deps.watchFirewalld(opts.busAddress, trigger, sinks.log, signal);
    started = true;
    if (pending.size > 0) arm();
    await untilAborted(signal);
    if (periodic !== undefined) clearInterval(periodic);
    if (timer !== undefined) clearTimeout(timer);
    if (retry !== undefined) clearTimeout(retry);
    await running;
    await Promise.all([nft.stopped, firewalld]);
    return 0;
  })();

  return { done, trigger };
}
