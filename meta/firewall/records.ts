/**
 * Which attachment let which addresses through, for the backends whose rules cannot tell: the
 * iptables rules (`-s <ip>/32 -j ACCEPT` in CNI-FORWARD) and firewalld zone sources carry no owner,
 * and must stay byte-identical to upstream's. ADD records the attachment's addresses before it
 * writes its rules, DEL forgets them, GC (gc.ts) removes those of attachments that are gone.
 *
 * One JSON file per attachment: `<dir>/<host netns inode>/<h16(network)>/<h16(containerID/ifName)>.json`
 * (default dir /run/cni/firewall: lost at reboot, as the rules and firewalld's runtime sources
 * are). Rules added by the Go plugin, or by this one before records existed, have no record and
 * are never collected.
 */
import { hashPrefix } from "../../shared/firewall/naming.ts";
import { joinPath, mkdirAll, readDir, readTextFile, replaceFile, stat, unlink } from "../../shared/sys/file.ts";
import type { HostAddress } from "./target.ts";

export const FIREWALL_STATE_DIR = "/run/cni/firewall";

export interface AttachmentRecord {
  network: string;
  containerID: string;
  ifName: string;
  backend: "iptables" | "firewalld";
  /** The firewalld zone the addresses were bound to. */
  zone: string;
  addrs: HostAddress[];
}

/** This netns's part of `root` (throwaway namespaces never share records). */
function netnsDir(root: string): string {
  return joinPath(root, String(stat("/proc/thread-self/ns/net").ino));
}

function fileOf(root: string, network: string, containerID: string, ifName: string): string {
  return joinPath(netnsDir(root), hashPrefix(network, 16), `${hashPrefix(`${containerID}/${ifName}`, 16)}.json`);
}

/** Records (replaces) the attachment's addresses. */
export function recordAttachment(root: string, r: AttachmentRecord): void {
  const path = fileOf(root, r.network, r.containerID, r.ifName);
  mkdirAll(path.slice(0, path.lastIndexOf("/")), 0o700);
  replaceFile(path, JSON.stringify(r), 0o600);
}

/** The attachment's record, if any. */
export function recordOf(root: string, network: string, containerID: string, ifName: string): AttachmentRecord | undefined {
  const r = parse(fileOf(root, network, containerID, ifName));
  return r?.network === network && r.containerID === containerID && r.ifName === ifName ? r : undefined;
}

/** Forgets the attachment (nothing when there is no record); the directories stay. */
export function forgetAttachment(root: string, network: string, containerID: string, ifName: string): void {
  try {
    unlink(fileOf(root, network, containerID, ifName));
  } catch (err) {
    if (recordOf(root, network, containerID, ifName) !== undefined) throw err;
  }
}

function parse(path: string): AttachmentRecord | undefined {
  try {
    const r = JSON.parse(readTextFile(path)) as AttachmentRecord;
    return typeof r.network === "string" && typeof r.containerID === "string" && typeof r.ifName === "string" && Array.isArray(r.addrs) ? r : undefined;
  } catch {
    return undefined;
  }
}

/** The names in `dir` (none when it cannot be read). */
function list(dir: string): string[] {
  try {
    return readDir(dir).map((e) => e.name);
  } catch {
    return [];
  }
}

/** Every record in this netns, of every network (unreadable files are skipped). */
export function allRecords(root: string): AttachmentRecord[] {
  const base = netnsDir(root);
  return list(base).flatMap((d) => list(joinPath(base, d)).filter((n) => n.endsWith(".json")).flatMap((n) => parse(joinPath(base, d, n)) ?? []));
}
