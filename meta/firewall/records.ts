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
import { mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { hashPrefix } from "../../shared/firewall/naming.ts";
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
  return join(root, String(statSync("/proc/thread-self/ns/net").ino));
}

function fileOf(root: string, network: string, containerID: string, ifName: string): string {
  return join(netnsDir(root), hashPrefix(network, 16), `${hashPrefix(`${containerID}/${ifName}`, 16)}.json`);
}

/** Records (replaces) the attachment's addresses. */
export function recordAttachment(root: string, r: AttachmentRecord): void {
  const path = fileOf(root, r.network, r.containerID, r.ifName);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp${process.pid}`;
  writeFileSync(tmp, JSON.stringify(r), { mode: 0o600 });
  renameSync(tmp, path);
}

/** The attachment's record, if any. */
export function recordOf(root: string, network: string, containerID: string, ifName: string): AttachmentRecord | undefined {
  return parse(fileOf(root, network, containerID, ifName));
}

/** Forgets the attachment (nothing when there is no record); empty directories go too. */
export function forgetAttachment(root: string, network: string, containerID: string, ifName: string): void {
  const path = fileOf(root, network, containerID, ifName);
  rmSync(path, { force: true });
  for (const dir of [dirname(path), netnsDir(root)]) {
    try {
      rmdirSync(dir);
    } catch {
      break; // not empty (or already gone)
    }
  }
}

function parse(path: string): AttachmentRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(path, "utf8")) as AttachmentRecord;
    return typeof r.network === "string" && typeof r.containerID === "string" && typeof r.ifName === "string" && Array.isArray(r.addrs) ? r : undefined;
  } catch {
    return undefined;
  }
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every record in this netns, of every network (unreadable files are skipped). */
export function allRecords(root: string): AttachmentRecord[] {
  const base = netnsDir(root);
  return list(base).flatMap((d) => list(join(base, d)).filter((n) => n.endsWith(".json")).flatMap((n) => parse(join(base, d, n)) ?? []));
}
