/**
 * tuning: a chained meta plugin that writes network sysctls in the container and changes link
 * attributes of CNI_IFNAME (MAC, promiscuous mode, MTU, all-multicast, txqueuelen), restoring the
 * attributes on DEL from a backup file. Mirrors upstream plugins/meta/tuning (HEAD),
 * upstream-matrix §2.11; the backup file has upstream's path and JSON, so Go and this plugin
 * restore each other's changes.
 *
 * ADD: duplicate sysctl keys → allow-list → ifname check → prevResult required → in the netns:
 * sysctls, backup file, MAC (and the result's interface MAC), promisc on, MTU, allmulti, txQLen.
 * Output = prevResult. CHECK: sysctl values, link present, MAC, promisc (compared even when not
 * configured), MTU, allmulti, txQLen. DEL: restore from the backup file; never fails once the
 * config parses.
 *
 * Deliberate differences from upstream (Go 1.1.1 / HEAD):
 * - DEL also restores the sysctls ADD changed (old values kept in the backup file under the extra
 *   key `sysctlRestore`, which Go's reader ignores), so a reused netns returns to its prior state;
 *   a backup file is therefore also written when only sysctls changed;
 * - allow-list patterns (/etc/cni/tuning/allowlist.conf) must match the whole key (anchored), so
 *   `net.ipv4.conf.eth0.rp_filter` no longer also allows `…rp_filter_x`; upstream matches unanchored;
 * - every sysctl key and the MAC are validated before anything is written (upstream fails midway,
 *   leaving earlier sysctls written); a failed ADD undoes what it changed;
 * - `args.cni.sysctl` without a `sysctl` map in the config works (upstream crashes);
 * - CHECK compares MACs case-insensitively (upstream compares the configured text);
 * - DEL removes the backup file when the netns or the interface is gone, or when the file is not
 *   valid JSON (upstream leaves it behind forever);
 * - no gratuitous ARP after a MAC change; sysctls are written in config order (Go: random order).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { IFF_ALLMULTI, IFF_PROMISC } from "../../shared/netlink/constants/if-link.ts";
import { withNetNS, type NetNS } from "../../shared/netns/index.ts";
import { backupPath, readBackup, removeBackup, writeBackup, type LinkBackup } from "./backup.ts";
import { changesLink, loadTuningConfig, parseMac, requireMac, type TuningConfig } from "./config.ts";
import { ALLOWLIST_PATH, checkAllowlist, checkDuplicateSysctlKeys, parseAllowlist, sysctlFileName } from "./sysctl-keys.ts";

const GO_ERRNO_TEXT: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EINVAL: "invalid argument",
  EROFS: "read-only file system",
  EISDIR: "is a directory",
  ENOTDIR: "not a directory",
};

/** An fs failure worded like Go's *PathError (`open /proc/sys/...: no such file or directory`). */
function fsError(op: string, path: string, err: unknown): InternalError {
  const code = (err as { code?: unknown }).code;
  const text = typeof code === "string" && GO_ERRNO_TEXT[code] !== undefined ? GO_ERRNO_TEXT[code] : messageOf(err);
  return new InternalError(`${op} ${path}: ${text}`, { cause: err });
}

function stdinText(args: CmdArgs): string {
  return new TextDecoder().decode(args.stdinData);
}

/** The allow-list lines, or undefined when the file does not exist (no restriction). */
function readAllowlist(): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(ALLOWLIST_PATH, "utf8");
  } catch (err) {
    if ((err as { code?: unknown }).code === "ENOENT") return undefined;
    throw fsError("open", ALLOWLIST_PATH, err);
  }
  return parseAllowlist(text);
}

/** The validation upstream does before touching the netns, in its order. */
function loadAndValidate(args: CmdArgs): TuningConfig {
  checkDuplicateSysctlKeys(stdinText(args));
  const conf = loadTuningConfig(args);
  const allow = readAllowlist();
  if (allow !== undefined) checkAllowlist([...conf.sysctl.keys()], allow);
  if (args.ifName.includes("/")) throw new InternalError(`Interface name (${args.ifName}) contains an invalid character /`);
  return conf;
}

function linkOrFail(nl: Handle, ifName: string): Link {
  try {
    return nl.linkByName(ifName);
  } catch (err) {
    throw new InternalError(`failed to get ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
}

function isPromisc(l: Link): boolean {
  return (l.flags & IFF_PROMISC) !== 0;
}

function isAllmulti(l: Link): boolean {
  return (l.flags & IFF_ALLMULTI) !== 0;
}

// ---- sysctls ---------------------------------------------------------------------------------

/**
 * Writes each `[file, value]` inside the netns (verbatim, no newline) and returns the old values
 * of the ones that changed. On a failed write, the ones already written are put back first.
 */
function writeSysctls(ns: NetNS, writes: readonly [string, string][]): [string, string][] {
  return withNetNS(ns, () => {
    const changed: [string, string][] = [];
    try {
      for (const [file, value] of writes) {
        let old: string | undefined;
        try {
          old = readFileSync(file, "utf8").replace(/\n$/, "");
        } catch {
          old = undefined; // write-only keys cannot be restored
        }
        try {
          writeFileSync(file, value);
        } catch (err) {
          throw fsError("open", file, err);
        }
        if (old !== undefined && old !== value && !changed.some(([f]) => f === file)) changed.push([file, old]);
      }
    } catch (err) {
      restoreSysctlsInside(changed);
      throw err;
    }
    return changed;
  });
}

/** Puts old values back, newest first; returns the failures. Must run inside the netns. */
function restoreSysctlsInside(entries: readonly [string, string][]): string[] {
  const errors: string[] = [];
  for (const [file, value] of [...entries].reverse()) {
    try {
      writeFileSync(file, value);
    } catch (err) {
      errors.push(`failed to restore sysctl ${file}: ${fsError("open", file, err).message}`);
    }
  }
  return errors;
}

// ---- link attributes -------------------------------------------------------------------------

/** The current values of exactly the attributes `conf` changes (upstream createBackup). */
function snapshot(link: Link, conf: TuningConfig): LinkBackup {
  const b: LinkBackup = {};
  if (conf.mac !== "") b.mac = link.mac ?? "";
  if (conf.promisc) b.promisc = isPromisc(link);
  if (conf.mtu !== 0) b.mtu = link.mtu;
  if (conf.allmulti !== undefined) b.allmulti = isAllmulti(link);
  if (conf.txQLen !== undefined) b.txQLen = link.txqlen ?? 0;
  return b;
}

/**
 * Restores from a backup (upstream order MTU, MAC, promisc, allmulti, txQLen; then, as an
 * extension, the sysctls). Returns the failures, worded as upstream.
 */
function restore(ns: NetNS, nl: Handle, index: number, b: LinkBackup): string[] {
  const errors: string[] = [];
  const step = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      errors.push(`failed to restore ${what}: ${messageOf(err)}`);
    }
  };
  if (b.mtu !== undefined) step("MTU", () => nl.linkSetMTU(index, b.mtu!));
  if (b.mac !== undefined) step("MAC address", () => nl.linkSetMAC(index, requireMac(b.mac!)));
  if (b.promisc !== undefined) step("promiscuous mode", () => nl.linkSetPromisc(index, b.promisc!));
  if (b.allmulti !== undefined) step("all-multicast mode", () => nl.linkSetAllmulti(index, b.allmulti!));
  if (b.txQLen !== undefined) step("transmit queue length", () => nl.linkSetTxqlen(index, b.txQLen!));
  if (b.sysctlRestore !== undefined) {
    const entries = b.sysctlRestore;
    errors.push(...withNetNS(ns, () => restoreSysctlsInside(entries)));
  }
  return errors;
}

function applyLinkChanges(nl: Handle, index: number, conf: TuningConfig, mac: string | undefined): void {
  if (mac !== undefined) nl.linkSetMAC(index, mac);
  if (conf.promisc) nl.linkSetPromisc(index, true);
  if (conf.mtu !== 0) nl.linkSetMTU(index, conf.mtu);
  if (conf.allmulti !== undefined) nl.linkSetAllmulti(index, conf.allmulti);
  if (conf.txQLen !== undefined) nl.linkSetTxqlen(index, conf.txQLen);
}

// ---- verbs -----------------------------------------------------------------------------------

function add(args: CmdArgs): Result {
  const conf = loadAndValidate(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("Required prevResult missing");
  const mac = conf.mac !== "" ? requireMac(conf.mac) : undefined;
  const writes: [string, string][] = [...conf.sysctl].map(([k, v]) => [sysctlFileName(k, args.ifName), v]);

  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const file = backupPath(conf.dataDir, args.containerID, args.ifName);
  const changedSysctls = writes.length > 0 ? writeSysctls(ns, writes) : [];
  let backup: LinkBackup = {};
  let link: Link | undefined;
  try {
    if (changesLink(conf)) {
      link = linkOrFail(nl, args.ifName);
      backup = snapshot(link, conf);
    }
    if (changedSysctls.length > 0) backup.sysctlRestore = changedSysctls;
    if (changesLink(conf) || changedSysctls.length > 0) {
      try {
        writeBackup(file, conf.dataDir, backup);
      } catch (err) {
        throw new InternalError(`failed to save file ${args.ifName}.json: ${messageOf(err)}`, { cause: err });
      }
    }
    if (link !== undefined) applyLinkChanges(nl, link.index, conf, mac);
  } catch (err) {
    // Undo: link attributes from the snapshot, then the sysctls; drop the backup file.
    const undo: LinkBackup = { ...backup, sysctlRestore: changedSysctls };
    if (link !== undefined) restore(ns, nl, link.index, undo);
    else withNetNS(ns, () => restoreSysctlsInside(changedSysctls));
    removeBackup(file);
    throw err;
  }

  if (mac !== undefined) {
    for (const iface of prev.interfaces ?? []) if (iface.name === args.ifName) iface.mac = conf.mac;
  }
  return prev;
}

function check(args: CmdArgs): void {
  checkDuplicateSysctlKeys(stdinText(args));
  const conf = loadTuningConfig(args);
  if (prevResultFrom(args) === undefined) throw new InternalError("Required prevResult missing");

  using ns = openContainerNetns(args.netns);
  for (const [key, want] of conf.sysctl) {
    const file = sysctlFileName(key, args.ifName);
    const got = withNetNS(ns, () => {
      try {
        return readFileSync(file, "utf8").replace(/\n$/, "");
      } catch (err) {
        throw fsError("open", file, err);
      }
    });
    if (got !== want) throw new InternalError(`Error: Tuning configured value of ${file} is ${want}, current value is ${got}`);
  }

  using nl = Handle.open(ns);
  let link: Link;
  try {
    link = nl.linkByName(args.ifName);
  } catch (err) {
    throw new InternalError(`Cannot find container link ${args.ifName}`, { cause: err });
  }
  const name = args.ifName;
  if (conf.mac !== "" && (parseMac(conf.mac) ?? conf.mac) !== (link.mac ?? "")) {
    throw new InternalError(`Error: Tuning configured Ethernet of ${name} is ${conf.mac}, current value is ${link.mac ?? ""}`);
  }
  if (conf.promisc !== isPromisc(link)) {
    throw new InternalError(`Error: Tuning link ${name} configured promisc is ${conf.promisc}, current value is ${isPromisc(link) ? 1 : 0}`);
  }
  if (conf.mtu !== 0 && conf.mtu !== link.mtu) {
    throw new InternalError(`Error: Tuning configured MTU of ${name} is ${conf.mtu}, current value is ${link.mtu}`);
  }
  if (conf.allmulti !== undefined && conf.allmulti !== isAllmulti(link)) {
    throw new InternalError(`Error: Tuning configured all-multicast mode of ${name} is ${conf.allmulti}, current value is ${isAllmulti(link)}`);
  }
  if (conf.txQLen !== undefined && conf.txQLen !== (link.txqlen ?? 0)) {
    throw new InternalError(`Error: Tuning configured Transmit Queue Length of ${name} is ${conf.txQLen}, current value is ${link.txqlen ?? 0}`);
  }
}

function del(args: CmdArgs): void {
  const conf = loadTuningConfig(args);
  const file = backupPath(conf.dataDir, args.containerID, args.ifName);
  // Upstream swallows every restore error: DEL succeeds once the config parses.
  try {
    const backup = readBackup(file);
    if (backup === undefined) return;
    if (backup === null) {
      removeBackup(file);
      return;
    }
    const ns = openNetnsForDel(args.netns);
    if (ns === undefined) {
      removeBackup(file);
      return;
    }
    using owned = ns;
    using nl = Handle.open(owned);
    let index: number;
    try {
      index = nl.linkByName(args.ifName).index;
    } catch {
      removeBackup(file);
      return;
    }
    const errors = restore(owned, nl, index, backup);
    if (errors.length === 0) removeBackup(file);
  } catch {
    // as upstream: DEL never fails here
  }
}

export const tuningPlugin: PluginSpec = {
  name: "tuning",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status: () => {},
  gc: () => {},
};
