/**
 * One `cni-plugins reload` pass (docs/operator.md): for every live attachment in the runtimes'
 * libcni cache, the firewall state its plugins own is checked and, where something is missing, put
 * back with the plugins' own ADD code (shared/firewall/reapply.ts), in the backend ADD used.
 *
 * - Attachments come from the cache files (`<cacheDir>/results/*`), with the network configuration
 *   each stores (the one the runtime used at ADD; the file in `--conf-dir` of the same name when
 *   the entry has none). A corrupt entry is reported and skipped, a plugin not of this suite is
 *   noted and skipped.
 * - Live as `cni-plugins inspect` judges (liveness.ts): netns path present, else an address held
 *   in some namespace, or listed by `--valid`. Anything else is skipped: nothing is written for a
 *   dead attachment.
 * - Checked and written under the firewall lock ADD and DEL take (shared/firewall/attachment-lock.ts),
 *   taken for at most {@link SESSION_MS} at a time, re-reading the tables at each take; an
 *   attachment DEL has marked since its cache entry was written (a pod being deleted) is skipped,
 *   as is one whose cache entry or netns went away meanwhile. Attachments go oldest ADD first, so
 *   that where ADD lets the newest container win (a hostPort two containers claim) it wins again.
 * - The firewalld parts (D-Bus, asynchronous) run outside the lock; one whose attachment DEL marked
 *   while it ran is taken back.
 * - Every part that was written is checked again at the end: what is still missing is a failure.
 *
 * Nothing is written in a dry run. Per-attachment failures are reported, never thrown; what throws
 * is what makes the whole pass impossible (the cache directory or the lock cannot be used).
 */
import { messageOf } from "../../shared/error/annotate.ts";
import type { AttachmentKey, DeletionMark } from "../../shared/firewall/attachment-lock.ts";
import { cachingDrivers, type CachingDrivers } from "../../shared/firewall/caching-drivers.ts";
import type { FirewallDrivers } from "../../shared/firewall/backend.ts";
import type { AsyncFirewallPart, FirewallPart, FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import { parsePrevResult } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, Result } from "../../shared/cni/types.ts";
import { parseCacheEntry, resultAddresses, RESULTS_SUBDIR, type CacheEntry } from "../cache-entry.ts";
import type { ValidSpec } from "../flags.ts";
import { judge, type NamespaceView } from "../liveness.ts";
import type { NetworkList } from "../networks.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

/** The longest the lock is held at a time (ADD and DEL wait for it). */
export const SESSION_MS = 250;

export interface ReloadOptions {
  /** The runtimes' libcni cache root (results/ below it). */
  cacheDir: string;
  /** Only these networks (empty: all). */
  networks: readonly string[];
  /** Attachments the operator declares live; undefined: the node decides. */
  valid: readonly ValidSpec[] | undefined;
  /** Check only; write nothing. */
  dryRun: boolean;
  /** The environment the plugins' code sees (DBUS_SYSTEM_BUS_ADDRESS, PATH for the tools). */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the plugins' own warnings go (CmdArgs.stderr); default: dropped. */
  stderr?: (text: string) => void;
}

/** What a pass touches; the system's in production (command.ts), fakes in unit tests. */
export interface ReloadDeps {
  readDir(path: string): string[];
  readFile(path: string): string;
  /** mtime in ms; undefined when the path does not exist. */
  mtimeMs(path: string): number | undefined;
  exists(path: string): boolean;
  /** The networks of --conf-dir, for entries that carry no config. */
  confNetwork(name: string): NetworkList | undefined;
  view(): NamespaceView;
  /** The firewall tools, run with `env` (ReloadOptions.env). */
  drivers(env: ReloadOptions["env"]): FirewallDrivers;
  /** The parts of each plugin type that writes firewall state. */
  parts: Readonly<Record<string, FirewallPartsOf>>;
  /** True for a plugin type of this suite. */
  ours(type: string): boolean;
  tryLock(): Disposable | undefined;
  deletionMarkTime(a: AttachmentKey): number | undefined;
  deletionMarks(): DeletionMark[];
  clearDeletionMark(a: AttachmentKey): void;
  sleep(ms: number): Promise<void>;
  now(): number;
}

export type PartState = "ok" | "restored" | "would restore" | "failed";

export interface PartOutcome {
  what: string;
  state: PartState;
  /** What the check found missing (before a restore; for a failure, what is still missing). */
  problems: string[];
  error?: string;
}

export type AttachmentState = "ok" | "restored" | "would restore" | "failed" | "skipped";

export interface AttachmentOutcome {
  network: string;
  containerID: string;
  ifName: string;
  /** The cache file. */
  cache: string;
  state: AttachmentState;
  /** Why it is live, or why it was skipped. */
  why: string;
  parts: PartOutcome[];
  /** Plugins of the list that were skipped, and why. */
  notes: string[];
}

export interface ReloadReport {
  cacheDir: string;
  dryRun: boolean;
  attachments: AttachmentOutcome[];
  /** Cache files that could not be used. */
  problems: string[];
}

interface Work {
  entry: CacheEntry;
  network: NetworkList;
  key: AttachmentKey;
  mtimeMs: number;
  /** Live because its netns path exists (not by --valid or an address): its disappearance ends that. */
  liveByNetns: boolean;
  outcome: AttachmentOutcome;
  sync: { part: FirewallPart; out: PartOutcome }[];
  async: { part: AsyncFirewallPart; out: PartOutcome }[];
}

const STATE_RANK: Record<AttachmentState, number> = { skipped: -1, ok: 0, "would restore": 1, restored: 1, failed: 2 };

function settle(o: AttachmentOutcome): void {
  if (o.state === "skipped" || (o.state === "failed" && o.parts.length === 0)) return;
  let state: AttachmentState = "ok";
  for (const p of o.parts) if (STATE_RANK[p.state] > STATE_RANK[state]) state = p.state;
  o.state = state;
}

function skip(w: Work, why: string): void {
  w.outcome.state = "skipped";
  w.outcome.why = why;
  for (const p of [...w.sync, ...w.async]) if (p.out.state === "restored" || p.out.state === "would restore") p.out.state = "ok";
  w.sync = [];
  w.async = [];
}

/** The CmdArgs plugin `index` of the list got at ADD, as libcni builds them (buildOneConfig). */
export function pluginArgs(e: CacheEntry, net: NetworkList, index: number, env: ReloadOptions["env"], stderr: (text: string) => void = () => {}): CmdArgs {
  const plugin = net.plugins[index]!;
  const config: Record<string, unknown> = { ...plugin, name: net.name, cniVersion: net.cniVersion };
  if (index > 0 && e.result !== undefined && e.result !== null) config.prevResult = e.result;
  const runtimeConfig: Record<string, unknown> = {};
  const caps = typeof plugin.capabilities === "object" && plugin.capabilities !== null ? (plugin.capabilities as Record<string, unknown>) : {};
  for (const [cap, on] of Object.entries(caps)) if (on === true && Object.hasOwn(e.capabilityArgs, cap)) runtimeConfig[cap] = e.capabilityArgs[cap];
  if (Object.keys(runtimeConfig).length > 0) config.runtimeConfig = runtimeConfig;
  const stdinData = new TextEncoder().encode(JSON.stringify(config));
  return withDelegate({
    command: "ADD",
    containerID: e.containerID,
    netns: e.netns,
    ifName: e.ifName,
    args: e.cniArgs.map(([k, v]) => `${k}=${v}`).join(";"),
    path: "",
    stdinData,
    config,
    cniVersion: net.cniVersion,
    env,
    stderr,
    scope: PROCESS_SCOPE,
  });
}

/** Every usable cache entry, oldest first; unusable ones as problems. */
function readEntries(opts: ReloadOptions, deps: ReloadDeps): { entries: { entry: CacheEntry; mtimeMs: number }[]; problems: string[] } {
  const dir = `${opts.cacheDir.replace(/\/+$/, "")}/${RESULTS_SUBDIR}`;
  let names: string[];
  try {
    names = deps.readDir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { entries: [], problems: [] };
    throw err;
  }
  const entries: { entry: CacheEntry; mtimeMs: number }[] = [];
  const problems: string[] = [];
  for (const name of names.sort()) {
    const file = `${dir}/${name}`;
    try {
      const mtimeMs = deps.mtimeMs(file);
      if (mtimeMs === undefined) continue; // removed meanwhile: its DEL is done
      entries.push({ entry: parseCacheEntry(file, deps.readFile(file)), mtimeMs });
    } catch (err) {
      problems.push(`libcni cache ${file}: ${messageOf(err)}; skipped`);
    }
  }
  entries.sort((a, b) => a.mtimeMs - b.mtimeMs || a.entry.file.localeCompare(b.entry.file));
  return { entries, problems };
}

async function takeLock(deps: ReloadDeps): Promise<Disposable> {
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    const lock = deps.tryLock();
    if (lock !== undefined) return lock;
    await deps.sleep(wait);
  }
}

/** Why `w` must not be written now (checked under the lock), or undefined. */
function goneMeanwhile(w: Work, deps: ReloadDeps): string | undefined {
  const marked = deps.deletionMarkTime(w.key);
  if (marked !== undefined && marked >= w.mtimeMs) return `being deleted (DEL marked it at ${new Date(marked).toISOString()})`;
  if (!deps.exists(w.entry.file)) return "its cache entry was removed meanwhile";
  if (w.liveByNetns && !deps.exists(w.entry.netns)) return `netns ${w.entry.netns} went away meanwhile`;
  return undefined;
}

function fail(out: PartOutcome, err: unknown): void {
  out.state = "failed";
  out.error = messageOf(err);
}

/** Records the check made after a setup: what is still missing makes the part a failure. */
function afterSetup(out: PartOutcome, left: readonly string[]): void {
  if (left.length === 0) return;
  out.state = "failed";
  out.problems = [...left];
  out.error = "still missing after the setup";
}

/** Records what the check found; true when a setup should follow (something missing, not a dry run). */
function needsSetup(out: PartOutcome, problems: string[], dryRun: boolean): boolean {
  out.problems = problems;
  if (problems.length === 0) return false;
  if (dryRun) out.state = "would restore";
  return !dryRun;
}

function runSync(w: Work, dryRun: boolean): void {
  for (const { part, out } of w.sync) {
    try {
      if (!needsSetup(out, part.check(), dryRun)) continue;
      part.setup();
      out.state = "restored";
    } catch (err) {
      fail(out, err);
    }
  }
}

/** Runs `fn` over `items` under the lock, in sessions of at most SESSION_MS, re-reading the tables at each take. */
async function inSessions<T>(items: readonly T[], d: CachingDrivers, deps: ReloadDeps, fn: (item: T) => void): Promise<void> {
  let i = 0;
  while (i < items.length) {
    {
      using _lock = await takeLock(deps);
      d.forget();
      const started = deps.now();
      do fn(items[i++]!);
      while (i < items.length && deps.now() - started < SESSION_MS);
    }
    if (i < items.length) await deps.sleep(0);
  }
}

async function runAsync(w: Work, dryRun: boolean, deps: ReloadDeps, d: CachingDrivers): Promise<void> {
  for (const { part, out } of w.async) {
    try {
      if (!needsSetup(out, await part.check(), dryRun)) continue;
      await part.setup();
      out.state = "restored";
      let gone: string | undefined;
      await inSessions([w], d, deps, () => void (gone = goneMeanwhile(w, deps)));
      if (gone !== undefined) {
        await part.undo();
        out.state = "ok";
        w.outcome.state = "skipped";
        w.outcome.why = gone;
        return;
      }
      afterSetup(out, await part.check());
    } catch (err) {
      fail(out, err);
    }
  }
}

/** Builds the parts of every plugin of `w`'s list (failures become failed parts). */
async function buildParts(w: Work, result: Result | undefined, opts: ReloadOptions, deps: ReloadDeps, d: FirewallDrivers): Promise<void> {
  for (let i = 0; i < w.network.plugins.length; i++) {
    const type = String(w.network.plugins[i]!.type);
    const of = deps.parts[type];
    if (of === undefined) {
      if (!deps.ours(type)) w.outcome.notes.push(`plugin ${JSON.stringify(type)} is not part of this suite: skipped`);
      continue;
    }
    try {
      if (result === undefined) throw new Error("the cache entry holds no usable result");
      for (const part of await of(pluginArgs(w.entry, w.network, i, opts.env, opts.stderr), result, d)) {
        const out: PartOutcome = { what: part.what, state: "ok", problems: [] };
        w.outcome.parts.push(out);
        if (part.sync) w.sync.push({ part, out });
        else w.async.push({ part, out });
      }
    } catch (err) {
      w.outcome.parts.push({ what: type, state: "failed", problems: [], error: messageOf(err) });
    }
  }
}

/** One pass (see module doc). */
export async function reloadPass(opts: ReloadOptions, deps: ReloadDeps): Promise<ReloadReport> {
  const { entries, problems } = readEntries(opts, deps);
  const wanted = (name: string): boolean => opts.networks.length === 0 || opts.networks.includes(name);
  const view = deps.view();
  const d = cachingDrivers(deps.drivers(opts.env));
  const work: Work[] = [];
  const outcomes: AttachmentOutcome[] = [];
  for (const { entry, mtimeMs } of entries) {
    if (!wanted(entry.networkName)) continue;
    const outcome: AttachmentOutcome = { network: entry.networkName, containerID: entry.containerID, ifName: entry.ifName, cache: entry.file, state: "ok", why: "", parts: [], notes: [] };
    outcomes.push(outcome);
    const network = entry.network ?? deps.confNetwork(entry.networkName);
    if (network === undefined) {
      outcome.state = "failed";
      outcome.why = `${entry.configProblem ?? "the cache entry holds no config"}, and the configuration directory has no network ${JSON.stringify(entry.networkName)}`;
      continue;
    }
    const seen = { containerID: entry.containerID, ifName: entry.ifName, holdings: [], addresses: new Set(resultAddresses(entry.result)), netns: new Set(entry.netns === "" ? [] : [entry.netns]), cached: true };
    const verdict = judge(seen, opts.valid, view);
    outcome.why = verdict.why;
    if (verdict.state !== "live") {
      outcome.state = "skipped";
      if (verdict.state === "unknown") outcome.why = "no netns or address recorded: not known to be live";
      continue;
    }
    const key = { network: entry.networkName, containerID: entry.containerID, ifName: entry.ifName };
    const w: Work = { entry, network, key, mtimeMs, liveByNetns: opts.valid === undefined && entry.netns !== "", outcome, sync: [], async: [] };
    let result: Result | undefined;
    try {
      result = parsePrevResult(entry.result, network.cniVersion);
    } catch {
      result = undefined;
    }
    await buildParts(w, result, opts, deps, d);
    work.push(w);
  }

  await inSessions(work, d, deps, (w) => {
    const gone = goneMeanwhile(w, deps);
    if (gone !== undefined) skip(w, gone);
    else runSync(w, opts.dryRun);
  });
  for (const w of work) if (w.async.length > 0 && w.outcome.state !== "skipped") await runAsync(w, opts.dryRun, deps, d);

  // What was written is read again: a part still incomplete is a failure (and never a loop).
  const written = work.filter((w) => w.sync.some((p) => p.out.state === "restored"));
  await inSessions(written, d, deps, (w) => {
    if (goneMeanwhile(w, deps) !== undefined) return;
    for (const { part, out } of w.sync) {
      if (out.state !== "restored") continue;
      try {
        afterSetup(out, part.check());
      } catch (err) {
        fail(out, err);
      }
    }
  });
  for (const o of outcomes) settle(o);

  if (!opts.dryRun) await sweepMarks(entries, deps, d);
  return { cacheDir: opts.cacheDir, dryRun: opts.dryRun, attachments: outcomes, problems };
}

/** Deletion marks younger than this are kept whatever the cache says (an entry may be written after the pass read them). */
export const MARK_GRACE_MS = 5 * 60_000;

/**
 * Forgets the deletion marks that have served: the attachment's cache entry is gone (the runtime
 * finished its DEL), or was written after the mark (ADDed again, e.g. by a plugin that does not
 * clear marks).
 */
async function sweepMarks(entries: readonly { entry: CacheEntry; mtimeMs: number }[], deps: ReloadDeps, d: CachingDrivers): Promise<void> {
  const cached = new Map(entries.map(({ entry, mtimeMs }) => [`${entry.networkName}\n${entry.containerID}\n${entry.ifName}`, mtimeMs]));
  const old = deps.now() - MARK_GRACE_MS;
  const served = deps.deletionMarks().filter((m) => {
    const mtime = cached.get(`${m.network}\n${m.containerID}\n${m.ifName}`);
    return m.atMs < old && (mtime === undefined || mtime > m.atMs);
  });
  await inSessions(served, d, deps, (m) => deps.clearDeletionMark(m));
}

/** Exit status of a pass: 1 when something could not be restored (or checked). */
export function passStatus(r: ReloadReport): number {
  return r.attachments.some((a) => a.state === "failed") ? 1 : 0;
}
