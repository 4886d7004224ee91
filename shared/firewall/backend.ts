/**
 * The one place that picks a firewall backend and tears down across backends, for every feature
 * that writes firewall rules (ipMasq here, portmap, the firewall plugin):
 *
 * - {@link chooseBackend}: the requested backend, else upstream's default — iptables, unless iptables
 *   is unusable and nftables usable (upstream `pkg/utils` `SupportsIPTables`/`SupportsNFTables`
 *   checks in portmap and ipmasq; the firewall plugin first asks whether firewalld runs);
 * - {@link teardownEverywhere}: DEL removes a feature's rules from EVERY backend whose tools are
 *   installed, because the backend that ADD used may have been chosen differently (an older plugin,
 *   another config, iptables uninstalled since). A backend that turns out to be unsupported here is
 *   skipped; other failures are collected and reported together;
 * - {@link FirewallFeature}: what one feature implements once per backend — iptables and nftables
 *   for every feature, and for the firewall plugin alone firewalld (meta/firewall), whose
 *   operations answer later, over D-Bus.
 *
 * Errors are plain (the CNI code is chosen by shared/cni/errors.ts from the cause chain); callers add
 * their context with `annotate`.
 */
import { annotateError, causeChain } from "../error/annotate.ts";
import type { CmdArgs, ValidAttachment } from "../cni/types.ts";
import { TeardownError } from "../undo/teardown.ts";
import { UNCOORDINATED, type AttachmentLock } from "./attachment-lock.ts";
import { CommandNotFoundError } from "./exec.ts";
import type { IptablesDriver } from "./iptables/driver.ts";
import { isNftUnsupported, type NftDriver } from "./nftables/driver.ts";

/** The backends every feature has (and {@link chooseBackend} picks from). */
export type BackendName = "iptables" | "nftables";

/**
 * When each backend's operations answer: iptables and nftables at once (a tool run, a netlink
 * request), firewalld later (D-Bus is asynchronous; never used inside a network namespace).
 */
interface AnswerTimes {
  iptables: "now";
  nftables: "now";
  firewalld: "later";
}

/** Every backend a feature can have. */
export type AnyBackendName = keyof AnswerTimes;

/** What an operation of backend `B` returns for `T`: `T` itself, or a Promise of it. */
export type Answer<T, B extends AnyBackendName> = AnswerTimes[B] extends "later" ? Promise<T> : T;

/** The tools the backends talk to; tests pass fakes (iptables/fake.ts, nftables/fake.ts). */
export interface FirewallDrivers {
  iptables: IptablesDriver;
  nftables: NftDriver;
  /**
   * How writers of an attachment's rules coordinate with each other and with `cni-plugins reload`
   * (attachment-lock.ts); left out by the in-memory fakes of unit tests, which nothing else sees.
   */
  lock?: AttachmentLock;
}

/**
 * What every plugin that writes firewall rules (bridge, ptp, portmap, firewall) is made with: how
 * one call gets its drivers. A verb asks once and hands the drivers to every step that reads or
 * writes rules; they probe nothing (no tool run, no variant detection, no lock) until a rule is
 * read or written. The host's: system.ts; tests pass fakes (iptables/fake.ts, nftables/fake.ts).
 */
export interface FirewallPluginDeps {
  /** The drivers of one call, from its environment and its scope's lock waiter. */
  drivers(args: Pick<CmdArgs, "env" | "scope">): FirewallDrivers;
}

/** The attachment lock of `d` (none for fakes). */
export function lockOf(d: FirewallDrivers): AttachmentLock {
  return d.lock ?? UNCOORDINATED;
}

/** Upstream's default: iptables, unless iptables is unusable and nftables usable. */
export function chooseBackend(requested: BackendName | undefined, d: FirewallDrivers): BackendName {
  if (requested !== undefined) return requested;
  return !d.iptables.available() && d.nftables.available() ? "nftables" : "iptables";
}

/** True for "this backend cannot be used here": its tool is missing, or the kernel lacks nftables. */
export function isBackendUnsupported(err: unknown): boolean {
  // through the context added on the way up (one family of several), or the failures of every
  // family together
  for (const e of causeChain(err)) {
    if (e instanceof CommandNotFoundError || isNftUnsupported(e)) return true;
    if (e instanceof TeardownError) return e.errors.length > 0 && e.errors.every(isBackendUnsupported);
  }
  return false;
}

/**
 * One feature in one backend `B` (iptables or nftables unless named). `Target` is what ADD and
 * CHECK act on, `DelTarget` what DEL knows (usually less: no addresses), `Removed` what DEL reports
 * back (e.g. the ports it unforwarded). Each operation answers as its backend does ({@link Answer}).
 */
export interface FirewallFeature<Target, DelTarget = Target, Removed = void, B extends AnyBackendName = BackendName> {
  readonly backend: B;
  /** False when the backend's tools are not installed. */
  available(): boolean;
  /** Makes the rules for `t` exactly what they should be (idempotent). */
  setup(t: Target): Answer<void, B>;
  /** Reads only; the problems found (empty: everything is in place). */
  check(t: Target): Answer<string[], B>;
  /**
   * Removes the rules of `t`; idempotent, succeeds when they are already gone. `expected`: this is
   * the backend the config selects, so its rules are most likely there (a plan may start from that).
   */
  teardown(t: DelTarget, expected: boolean): Answer<Removed, B>;
  /** Removes the rules of `network` that belong to no attachment in `keep` (where the rules tell). */
  gc(network: string, keep: readonly ValidAttachment[]): Answer<void, B>;
}

/**
 * Runs `fn` for every item, even after one failed; then throws the one failure (annotated with
 * `label(item)`), or a TeardownError holding each. For teardown work that must not stop halfway.
 */
export function runAll<T, R>(items: readonly T[], label: (item: T) => string, fn: (item: T) => R): R[] {
  const out: R[] = [];
  const errors: unknown[] = [];
  for (const item of items) {
    try {
      out.push(fn(item));
    } catch (err) {
      errors.push(annotateError(label(item), err));
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new TeardownError(errors);
  return out;
}

/** Runs `run` for each available backend of `features`; unsupported backends are skipped. */
function everyBackend<F extends { readonly backend: BackendName; available(): boolean }, R>(features: readonly F[], run: (f: F) => R): R[] {
  const ran = runAll(
    features.filter((f) => f.available()),
    (f) => f.backend,
    (f): { result: R } | undefined => {
      try {
        return { result: run(f) };
      } catch (err) {
        if (isBackendUnsupported(err)) return undefined;
        throw err;
      }
    },
  );
  return ran.flatMap((r) => (r === undefined ? [] : [r.result]));
}

/**
 * DEL: `teardown(t)` in every available backend (see module doc), `chosen` being the one the
 * config selects; the results of those that ran.
 */
export function teardownEverywhere<D, R>(features: readonly FirewallFeature<unknown, D, R>[], t: D, chosen: BackendName): R[] {
  return everyBackend(features, (f) => f.teardown(t, f.backend === chosen));
}

/** GC: `gc(network, keep)` in every available backend (see module doc). */
export function collectEverywhere(features: readonly FirewallFeature<unknown, unknown, unknown>[], network: string, keep: readonly ValidAttachment[]): void {
  everyBackend(features, (f) => f.gc(network, keep));
}
