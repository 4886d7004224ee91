/**
 * tuning: a chained meta plugin that writes network sysctls in the container and changes link
 * attributes of CNI_IFNAME (MAC, promiscuous mode, MTU, all-multicast, txqueuelen), restoring them
 * on DEL from a backup file. Mirrors upstream plugins/meta/tuning (HEAD); the backup file has
 * upstream's path and JSON, so Go and this plugin restore each other's changes.
 *
 * ADD: duplicate sysctl keys → allow-list → ifname check → prevResult required → in the netns:
 * sysctls, backup file, MAC (and the result's interface MAC), promisc on, MTU, allmulti, txQLen.
 * Output = prevResult. A failure undoes what ADD changed with DEL's restore steps.
 * CHECK: sysctl values, link present, MAC, promisc (compared even when not configured), MTU,
 * allmulti, txQLen. A MAC change is refused when the link's current address could not be set back
 * (lo's 00:00:00:00:00:00: the kernel refuses it), before anything is changed on the link.
 * DEL: every restore step from the backup file, then the file goes (a restore that failed is written
 * to stderr: as upstream, DEL does not fail for it); DEL fails only when the file cannot be removed.
 * GC: removes this network's backup files of attachments not in `cni.dev/valid-attachments`.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate, annotateError } from "../../shared/error/annotate.ts";
import { requirePrevResult } from "../../shared/iface/check.ts";
import { isValidEtherAddr, parseMacAddress } from "../../shared/ip/mac-address.ts";
import { IFF_ALLMULTI, IFF_PROMISC } from "../../shared/netlink/constants/if-link.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { withNetNS } from "../../shared/netns/enter.ts";
import type { NetNS } from "../../shared/netns/netns.ts";
import { ENOENT, hasErrno } from "../../shared/sys/errno.ts";
import { readTextFile, writeFile } from "../../shared/sys/file.ts";
import { PathError } from "../../shared/sys/path-error.ts";
import { teardown, TeardownError, Undo, type TeardownStep } from "../../shared/undo/teardown.ts";
import { backupPath, readBackup, removeBackup, staleBackups, writeBackup, type LinkBackup } from "./backup.ts";
import { changesLink, loadTuningConfig, requireMac, type TuningConfig } from "./config.ts";
import { ALLOWLIST_PATH, checkAllowlist, checkDuplicateSysctlKeys, parseAllowlist, sysctlFileName } from "./sysctl-keys.ts";

function stdinText(args: CmdArgs): string {
  return new TextDecoder().decode(args.stdinData);
}

/** The allow-list lines, or undefined when the file does not exist (no restriction). */
function readAllowlist(): string[] | undefined {
  let text: string;
  try {
    text = readTextFile(ALLOWLIST_PATH);
  } catch (err) {
    if (hasErrno(err, ENOENT)) return undefined;
    throw new PathError("open", ALLOWLIST_PATH, err);
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

function isPromisc(l: Link): boolean {
  return (l.flags & IFF_PROMISC) !== 0;
}

function isAllmulti(l: Link): boolean {
  return (l.flags & IFF_ALLMULTI) !== 0;
}

// ---- sysctls ---------------------------------------------------------------------------------

/**
 * Writes each `[file, value]` inside the netns (verbatim, no newline), appending to `changed` the old
 * value of each file it changes, as it goes (so a failure midway leaves `changed` exact).
 */
function writeSysctls(ns: NetNS, writes: readonly [string, string][], changed: [string, string][]): void {
  withNetNS(ns, () => {
    for (const [file, value] of writes) {
      let old: string | undefined;
      try {
        old = readTextFile(file).replace(/\n$/, "");
      } catch {
        old = undefined; // write-only keys cannot be restored
      }
      try {
        writeFile(file, value);
      } catch (err) {
        throw new PathError("open", file, err);
      }
      if (old !== undefined && old !== value && !changed.some(([f]) => f === file)) changed.push([file, old]);
    }
  });
}

/** Puts old sysctl values back, newest first, each attempted; throws the failures. */
function restoreSysctls(ns: NetNS, entries: readonly [string, string][]): void {
  const errors = withNetNS(ns, () => {
    const failed: Error[] = [];
    for (const [file, value] of [...entries].reverse()) {
      try {
        writeFile(file, value);
      } catch (err) {
        failed.push(annotateError(`failed to restore sysctl ${file}`, new PathError("open", file, err)));
      }
    }
    return failed;
  });
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new TeardownError(errors);
}

// ---- link attributes -------------------------------------------------------------------------

/**
 * The current values of exactly the attributes `conf` changes (upstream createBackup). A MAC that
 * the kernel would not take back (not a valid unicast Ethernet address) is refused (code 7).
 */
function snapshot(link: Link, conf: TuningConfig): LinkBackup {
  if (conf.mac !== "" && !isValidEtherAddr(link.mac ?? "")) {
    throw new InvalidConfigError(
      `cannot set mac on ${JSON.stringify(link.name)}: its current address ${link.mac ?? "(none)"} could not be restored on DEL`,
    );
  }
  const b: LinkBackup = {};
  if (conf.mac !== "") b.mac = link.mac ?? "";
  if (conf.promisc) b.promisc = isPromisc(link);
  if (conf.mtu !== 0) b.mtu = link.mtu;
  if (conf.allmulti !== undefined) b.allmulti = isAllmulti(link);
  if (conf.txQLen !== undefined) b.txQLen = link.txqlen ?? 0;
  return b;
}

function applyLinkChanges(nl: Handle, index: number, conf: TuningConfig, mac: string | undefined): void {
  if (mac !== undefined) nl.linkSetMAC(index, mac);
  if (conf.promisc) nl.linkSetPromisc(index, true);
  if (conf.mtu !== 0) nl.linkSetMTU(index, conf.mtu);
  if (conf.allmulti !== undefined) nl.linkSetAllmulti(index, conf.allmulti);
  if (conf.txQLen !== undefined) nl.linkSetTxqlen(index, conf.txQLen);
}

// ---- teardown --------------------------------------------------------------------------------

/** The link-attribute steps, in upstream's restore order (MTU, MAC, promisc, allmulti, txQLen). */
const LINK_STEPS = ["MTU", "MAC address", "promiscuous mode", "all-multicast mode", "transmit queue length"] as const;
const SYSCTL_STEP = "sysctls";
const BACKUP_FILE_STEP = "backup file";

/**
 * What DEL restores from backup `b` (ADD fills `b` as it changes things), in order: the link
 * attributes of link `target.index`, then (an extension) the sysctls. Each step restores only what
 * `b` holds. Failures read `failed to restore <what>: …`, as upstream.
 */
function restoreSteps(ns: NetNS, nl: Handle, target: { index?: number }, b: LinkBackup): TeardownStep[] {
  const attr = (name: (typeof LINK_STEPS)[number], apply: (index: number) => void, present: () => boolean): TeardownStep => ({
    name,
    run: () => {
      if (target.index !== undefined && present()) annotate(`failed to restore ${name}`, () => apply(target.index!));
    },
  });
  return [
    attr("MTU", (i) => nl.linkSetMTU(i, b.mtu!), () => b.mtu !== undefined),
    attr("MAC address", (i) => nl.linkSetMAC(i, requireMac(b.mac!)), () => b.mac !== undefined),
    attr("promiscuous mode", (i) => nl.linkSetPromisc(i, b.promisc!), () => b.promisc !== undefined),
    attr("all-multicast mode", (i) => nl.linkSetAllmulti(i, b.allmulti!), () => b.allmulti !== undefined),
    attr("transmit queue length", (i) => nl.linkSetTxqlen(i, b.txQLen!), () => b.txQLen !== undefined),
    { name: SYSCTL_STEP, run: () => restoreSysctls(ns, b.sysctlRestore ?? []) },
  ];
}

// ---- verbs -----------------------------------------------------------------------------------

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadAndValidate(args);
  const prev = requirePrevResult(args);
  const mac = conf.mac !== "" ? requireMac(conf.mac) : undefined;
  const writes: [string, string][] = [...conf.sysctl].map(([k, v]) => [sysctlFileName(k, args.ifName), v]);

  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const file = backupPath(conf.dataDir, args.containerID, args.ifName);
  const backup: LinkBackup = { network: conf.network };
  const target: { index?: number } = {};
  // The backup file goes too: ADD leaves nothing for DEL to restore.
  const undo = new Undo([...restoreSteps(ns, nl, target, backup), { name: BACKUP_FILE_STEP, run: () => removeBackup(file) }], args.stderr);
  try {
    const changedSysctls: [string, string][] = [];
    backup.sysctlRestore = changedSysctls;
    undo.reached(SYSCTL_STEP);
    if (writes.length > 0) writeSysctls(ns, writes, changedSysctls);
    if (changesLink(conf)) {
      const link = annotate(`failed to get ${JSON.stringify(args.ifName)}`, () => nl.linkByName(args.ifName));
      target.index = link.index;
      Object.assign(backup, snapshot(link, conf));
    }
    if (changesLink(conf) || changedSysctls.length > 0) {
      undo.reached(BACKUP_FILE_STEP);
      annotate(`failed to save file ${args.ifName}.json`, () => writeBackup(file, conf.dataDir, backup));
    }
    if (target.index !== undefined) {
      undo.reached(...LINK_STEPS);
      applyLinkChanges(nl, target.index, conf, mac);
    }
  } catch (err) {
    return await undo.rollback(err);
  }

  if (mac !== undefined) {
    for (const iface of prev.interfaces ?? []) if (iface.name === args.ifName) iface.mac = conf.mac;
  }
  return prev;
}

function check(args: CmdArgs): void {
  checkDuplicateSysctlKeys(stdinText(args));
  const conf = loadTuningConfig(args);
  requirePrevResult(args);

  using ns = openContainerNetns(args.netns);
  for (const [key, want] of conf.sysctl) {
    const file = sysctlFileName(key, args.ifName);
    const got = withNetNS(ns, () => {
      try {
        return readTextFile(file).replace(/\n$/, "");
      } catch (err) {
        throw new PathError("open", file, err);
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
  if (conf.mac !== "" && (parseMacAddress(conf.mac) ?? conf.mac) !== (link.mac ?? "")) {
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

/** Runs the restore steps for `backup` on CNI_IFNAME; nothing when the netns or the interface is gone. */
async function restoreFrom(args: CmdArgs, backup: LinkBackup): Promise<void> {
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  using nl = Handle.open(owned);
  const link = nl.linkFind(args.ifName);
  if (link !== undefined) await teardown(restoreSteps(owned, nl, { index: link.index }, backup));
}

async function del(args: CmdArgs): Promise<void> {
  const conf = loadTuningConfig(args, { forDel: true });
  const file = backupPath(conf.dataDir, args.containerID, args.ifName);
  try {
    const backup = readBackup(file);
    // An unreadable file (null) restores nothing, as upstream, and goes.
    if (backup !== undefined && backup !== null) await restoreFrom(args, backup);
  } catch (err) {
    // As upstream, a restore that fails does not fail DEL; unlike upstream, the file goes anyway:
    // a restore that failed once (lo's MAC) fails again, and the file would stay forever.
    args.stderr(`tuning: restoring ${args.ifName} from ${file} failed: ${messageOf(err)}\n`);
  }
  annotate("failed to remove the backup file", () => removeBackup(file));
}

async function gc(args: CmdArgs): Promise<void> {
  const conf = loadTuningConfig(args);
  const valid = validAttachmentsOf(args.config);
  if (valid === undefined) return; // absent or malformed: collect nothing
  await teardown(
    staleBackups(conf.dataDir, conf.network, valid).map((file) => ({
      name: file,
      run: () => annotate("failed to remove a stale backup file", () => removeBackup(file)),
    })),
  );
}

export const tuningPlugin: PluginSpec = { name: "tuning", versions: ALL_VERSIONS, add, check, del, status: () => {}, gc };
