/**
 * Whether a caller may be served by the agent: only when a fresh plugin process started by that
 * caller would see what the agent sees and could do all the agent can (docs/resident.md, "When the
 * agent serves a call"). The process judged is the shim, which the caller has just executed: its
 * /proc entry shows what a fresh process of that caller has.
 *
 * - The caller is the process the kernel says connected (SO_PEERCRED), and the pid it sent agrees.
 * - It runs as root or as the agent's own user, and with the agent's group.
 * - Its user, network and mount namespaces and its root directory are the agent's own (kernel
 *   identity: /proc/<pid>/ns/{user,net}; device, inode and mount id of /proc/<pid>/root, so that a
 *   bind mount of / is not the agent's root; a mount id is one mount of one mount namespace, so the
 *   same root mount is the same mount namespace too, and ns/mnt is read only to say why a caller
 *   is refused). A caller under
 *   `ip netns exec`, in a container, a user namespace or a chroot is not served; its shim runs the
 *   standalone executable where it is.
 * - Its privilege is no less than the agent's (/proc/<pid>/status, one read): effective, permitted
 *   and bounding capabilities and supplementary groups each a superset of the agent's, no_new_privs
 *   only where the agent has it too, no seccomp filter, and the agent's LSM contexts
 *   (/proc/<pid>/attr) or AppArmor's "unconfined".
 * Its working directory and umask are not checked: the worker adopts both for the call.
 * Not compared, as /proc does not show them: Landlock domains, device cgroup rules, the programs
 * of seccomp filters (so a caller under any filter is refused). A refusal is always safe: the shim
 * then runs the standalone executable, with exactly the caller's own privilege.
 */
import { EINVAL, errnoName, SyscallError } from "../shared/sys/errno.ts";
import { readDir, readLinkText, readProcText, statWithMount } from "../shared/sys/file.ts";
import { peerCredentials, type PeerCredentials } from "../shared/sys/process.ts";
import { descendsFrom, lineageOf, type AgentLineage, type Lineage } from "./ancestry.ts";
import { Refusal } from "./refusal.ts";

/** A process id, or "self" for the agent. */
type Pid = number | "self";

/** A file's kernel identity. */
export interface FileId {
  dev: bigint;
  ino: bigint;
}

/**
 * What makes two processes see the same files and network and hold capabilities over the same
 * things. A namespace is named as /proc/<pid>/ns/<type> names it (`net:[4026531840]`: its inode on
 * the one nsfs), read as a link, which costs a third of a stat.
 */
export interface Identity {
  user: string;
  net: string;
  root: FileId;
  /** The mount the root directory is (statWithMount); undefined when the kernel does not report it. */
  rootMount: bigint | undefined;
}

/** The capability sets compared; a caller's must each hold all of the agent's. */
export const CAPABILITY_SETS = ["CapEff", "CapPrm", "CapBnd"] as const;
export type CapabilitySet = (typeof CAPABILITY_SETS)[number];

/** What /proc/<pid>/status says of a process's privilege. */
export interface Privilege {
  /** The capability sets, as bit masks. */
  caps: Record<CapabilitySet, bigint>;
  noNewPrivs: boolean;
  /** 0: none, 1: strict, 2: filter. */
  seccomp: number;
  /** The supplementary groups. */
  groups: number[];
  /** The group that file access is checked as (the fourth of Gid:), which the process is in whatever its groups. */
  fsgid: number;
  /** Its parent (PPid:), where the walk for a nested call starts (ancestry.ts). */
  parent: number;
}

/** One reading of an LSM attribute file: the context, or the errno that reading it failed with. */
export type LsmReading = { context: string } | { errno: number };

/** Where the facts about a process come from: /proc, or what a test makes up. */
export interface ProcFacts {
  identity(pid: Pid): Identity;
  /** /proc/<pid>/ns/mnt, read only to tell why a caller with another root is refused. */
  mountNamespace(pid: Pid): string;
  /** The text of /proc/<pid>/status. */
  status(pid: Pid): string;
  /** The text of /proc/<pid>/attr/<file>; throws SyscallError. */
  attr(pid: Pid, file: string): string;
  /** This kernel's LSM attribute files: "current", and "<lsm>/current" for each per-LSM directory. */
  lsmFiles(): string[];
  /** Its parent and when it started (/proc/<pid>/stat); undefined when it is gone. */
  lineage(pid: number): Lineage | undefined;
}

/** The agent's own identity, credentials, privilege and LSM contexts, against which callers are judged. */
export interface Self {
  identity: Identity;
  /** Its /proc/self/ns/mnt (identityRefusal). */
  mountNamespace: string;
  uid: number;
  gid: number;
  privilege: Privilege;
  /** Its reading of each of lsmFiles(). */
  lsm: ReadonlyMap<string, LsmReading>;
  /** Its pid and when it started: a nested call descends from it. */
  lineage: AgentLineage;
}

/** A /proc/<pid>/status that lacks a line or has one in an unknown form. */
export class ProcStatusError extends Error {
  override name = "ProcStatusError";
}

/** The identity of process `pid` ("self" for the agent), read from /proc. */
export function identityOf(pid: Pid): Identity {
  const root = statWithMount(`/proc/${pid}/root`);
  const ns = (type: string) => readLinkText(`/proc/${pid}/ns/${type}`);
  return { user: ns("user"), net: ns("net"), root, rootMount: root.mountId };
}

/** The facts of the running kernel. */
export const liveProc: ProcFacts = {
  identity: identityOf,
  mountNamespace: (pid) => readLinkText(`/proc/${pid}/ns/mnt`),
  status: (pid) => readProcText(`/proc/${pid}/status`),
  attr: (pid, file) => readProcText(`/proc/${pid}/attr/${file}`),
  lsmFiles: () => ["current", ...readDir("/proc/self/attr").flatMap((e) => (e.kind === "dir" ? [`${e.name}/current`] : []))],
  lineage: lineageOf,
};

/** The value of the line `name:` of a /proc/<pid>/status, checked against its `form`. */
function statusField(status: string, name: string, form: RegExp): string {
  // Found by search, not by splitting the ~55 lines: this runs for every call, and splitting cost
  // half as much as reading the file.
  const at = status.indexOf(`\n${name}:`);
  if (at < 0) throw new ProcStatusError(`no ${name} line in the status`);
  const start = at + name.length + 2;
  const end = status.indexOf("\n", start);
  const value = status.slice(start, end < 0 ? undefined : end).trim();
  if (!form.test(value)) throw new ProcStatusError(`${name} ${JSON.stringify(value)} in the status`);
  return value;
}

/** The lines of /proc/<pid>/status that bear on privilege. */
export function parsePrivilege(status: string): Privilege {
  const mask = (name: CapabilitySet) => BigInt(`0x${statusField(status, name, /^[0-9a-f]{1,16}$/)}`);
  const groups = statusField(status, "Groups", /^[0-9 \t]*$/);
  const gids = statusField(status, "Gid", /^[0-9]+\s+[0-9]+\s+[0-9]+\s+[0-9]+$/).split(/\s+/);
  return {
    caps: { CapEff: mask("CapEff"), CapPrm: mask("CapPrm"), CapBnd: mask("CapBnd") },
    noNewPrivs: statusField(status, "NoNewPrivs", /^[01]$/) === "1",
    seccomp: Number(statusField(status, "Seccomp", /^[0-9]$/)),
    groups: groups === "" ? [] : groups.split(/\s+/).map(Number),
    fsgid: Number(gids[3]),
    parent: Number(statusField(status, "PPid", /^[0-9]+$/)),
  };
}

/** Reads one LSM attribute file of `pid`: its context, or why it cannot be read. */
function readAttr(proc: ProcFacts, pid: Pid, file: string): LsmReading {
  try {
    return { context: proc.attr(pid, file) };
  } catch (err) {
    if (err instanceof SyscallError) return { errno: err.errno };
    throw err;
  }
}

/** The agent's own Self (its effective user and group, as SO_PEERCRED gives a caller's). */
export function agentSelf(proc: ProcFacts = liveProc, ids = { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0 }): Self {
  return {
    identity: proc.identity("self"),
    mountNamespace: proc.mountNamespace("self"),
    uid: ids.uid,
    gid: ids.gid,
    privilege: parsePrivilege(proc.status("self")),
    lsm: new Map(proc.lsmFiles().map((file) => [file, readAttr(proc, "self", file)])),
    lineage: { pid: process.pid, started: proc.lineage(process.pid)?.started ?? 0 },
  };
}

function same(a: FileId, b: FileId): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function credentialRefusal(cred: PeerCredentials, self: Self): string {
  if (cred.uid !== 0 && cred.uid !== self.uid) return `uid ${cred.uid} is neither root nor the agent's (${self.uid})`;
  if (cred.gid !== self.gid) return `gid ${cred.gid} is not the agent's (${self.gid})`;
  return "";
}

/**
 * Namespaces and root. The user namespace too: root in a user namespace of its own has every
 * capability there (its status says so) and none over the agent's network namespace. (A caller in
 * an ancestor of the agent's would have more; it is refused all the same, which is safe.)
 */
function identityRefusal(pid: number, theirs: Identity, self: Self, proc: ProcFacts): string {
  const mine = self.identity;
  if (theirs.user !== mine.user) return `pid ${pid} is in another user namespace`;
  if (theirs.net !== mine.net) return `pid ${pid} is in another network namespace`;
  if (mine.rootMount === undefined) return "the kernel does not report mount ids (STATX_MNT_ID, Linux 5.8): a chroot into a bind mount of / cannot be told from the agent's root";
  if (same(theirs.root, mine.root) && theirs.rootMount === mine.rootMount) return "";
  // Refused: say why (another mount namespace, or another root in this one).
  if (proc.mountNamespace(pid) !== self.mountNamespace) return `pid ${pid} is in another mount namespace`;
  if (!same(theirs.root, mine.root)) return `pid ${pid} has another root directory`;
  return `pid ${pid} has another root directory (mount ${theirs.rootMount}, the agent's ${mine.rootMount}: a bind mount of it)`;
}

const hex16 = (mask: bigint) => mask.toString(16).padStart(16, "0");

/**
 * Capabilities, groups, no_new_privs, seccomp. A caller with more than the agent (a capability, a
 * group the agent lacks; the agent under no_new_privs or a filter, the caller not) is served: the
 * call then runs with the agent's, which are less than its own, never more.
 */
function privilegeRefusal(pid: number, theirs: Privilege, mine: Privilege): string {
  for (const set of CAPABILITY_SETS) {
    const [t, m] = [theirs.caps[set], mine.caps[set]];
    if ((t & m) !== m) return `pid ${pid} has fewer capabilities than the agent (${set} ${hex16(t)}, the agent ${hex16(m)})`;
  }
  // Of a group the caller's file access is checked as it is a member anyway (as the kernel's
  // in_group_p says): a container runtime lists a process's own group among its supplementary
  // ones, which kubelet's runtime on the host, a systemd service, does not.
  const missing = mine.groups.filter((g) => g !== theirs.fsgid && !theirs.groups.includes(g));
  if (missing.length > 0) return `pid ${pid} lacks supplementary groups of the agent (${missing.join(" ")})`;
  if (theirs.noNewPrivs && !mine.noNewPrivs) return `pid ${pid} runs with no_new_privs, the agent does not`;
  // Two seccomp filters cannot be compared (a program each, stacked; reading them back needs
  // ptrace), so a caller under one is not served, whatever the agent's.
  if (theirs.seccomp !== 0) return `pid ${pid} is confined by seccomp (mode ${theirs.seccomp}), which cannot be compared with the agent's`;
  return "";
}

const AA_UNCONFINED = "unconfined";

function contextOf(r: LsmReading | undefined): string | undefined {
  return r !== undefined && "context" in r ? r.context.replace(/[\n\0]+$/, "") : undefined;
}

/**
 * Whether `file` is AppArmor's: attr/apparmor/current, or attr/current when AppArmor answers it
 * (the agent reads the same context in both; mainline kernels run one of AppArmor, SELinux and
 * Smack at most, and that one answers attr/current).
 */
function isAppArmors(file: string, self: Self): boolean {
  if (file === "apparmor/current") return true;
  const aa = contextOf(self.lsm.get("apparmor/current"));
  return file === "current" && aa !== undefined && aa === contextOf(self.lsm.get("current"));
}

function sameReading(a: LsmReading, b: LsmReading): boolean {
  if ("context" in a) return "context" in b && a.context === b.context;
  return "errno" in b && a.errno === b.errno;
}

const shown = (r: LsmReading) => ("context" in r ? JSON.stringify(contextOf(r)) : errnoName(r.errno));

/**
 * LSM contexts, file by file: the caller's must be the agent's, except that AppArmor's
 * "unconfined" (exactly that: a label of a policy namespace reads otherwise) holds every profile.
 */
function lsmRefusal(pid: number, self: Self, proc: ProcFacts): string {
  for (const [file, mine] of self.lsm) {
    // No LSM of this kernel provides the file (EINVAL, as where there is no LSM at all): a fact of
    // the kernel, the same for every process, so the caller's need not be read.
    if ("errno" in mine && mine.errno === EINVAL) continue;
    const theirs = readAttr(proc, pid, file);
    if ("errno" in theirs && "context" in mine) return `pid ${pid}'s attr/${file} cannot be read (${errnoName(theirs.errno)}), the agent's can`;
    if (sameReading(theirs, mine)) continue;
    if (isAppArmors(file, self) && contextOf(theirs) === AA_UNCONFINED) continue;
    return `pid ${pid} has another LSM context in attr/${file} (${shown(theirs)}, the agent ${shown(mine)})`;
  }
  return "";
}

/** Why a caller is not served (undefined when it is). `credentials` and `proc` are for tests. */
export function refusalFor(fd: number, claimedPid: number, self: Self, credentials: (fd: number) => PeerCredentials = peerCredentials, proc: ProcFacts = liveProc): Refusal | undefined {
  let cred: PeerCredentials;
  try {
    cred = credentials(fd);
  } catch (err) {
    return new Refusal("peer", `no peer credentials: ${(err as Error).message}`);
  }
  if (cred.pid !== claimedPid) return new Refusal("peer", `the caller says pid ${claimedPid}, the kernel says ${cred.pid}`);
  const refused = (reason: Refusal["reason"], text: string) => (text === "" ? undefined : new Refusal(reason, text));
  const why = refused("user", credentialRefusal(cred, self));
  if (why !== undefined) return why;
  try {
    const identity = refused("namespace", identityRefusal(cred.pid, proc.identity(cred.pid), self, proc));
    if (identity !== undefined) return identity;
    const privilege = parsePrivilege(proc.status(cred.pid));
    return (
      refused("privilege", privilegeRefusal(cred.pid, privilege, self.privilege)) ??
      refused("lsm", lsmRefusal(cred.pid, self, proc)) ??
      (descendsFrom(privilege.parent, self.lineage, (pid) => proc.lineage(pid)) ? new Refusal("nested", `pid ${cred.pid} is a process this agent started (a nested call runs standalone)`) : undefined)
    );
  } catch (err) {
    return new Refusal("peer", `pid ${cred.pid} cannot be examined: ${(err as Error).message}`);
  }
}
