/**
 * The backup file that lets DEL undo what ADD changed: `<dataDir>/<containerID>_<ifName>.json`,
 * exactly upstream's path and JSON (`json.MarshalIndent(v, "", " ")`, keys mac, promisc, mtu,
 * allmulti, txQLen, each only when that attribute was changed), so a Go tuning DEL restores what
 * this plugin's ADD changed and the other way round.
 *
 * Beyond upstream, two extra keys: `sysctlRestore`, the old values of the sysctls ADD changed
 * (absolute /proc/sys path → old value, in write order), and `network`, the network name, so that
 * GC collects only its own network's files in a dataDir that several networks share. Go's decoder
 * ignores unknown keys, so a Go DEL still restores the link attributes and removes the file.
 */
import type { ValidAttachment } from "../../shared/cni/types.ts";
import { goJsonString } from "../../shared/cni/result/go-json.ts";
import { ENOENT, hasErrno } from "../../shared/sys/errno.ts";
import { joinPath, lstatIfExists, mkdirAll, readDir, readTextFile, unlink, writeFile } from "../../shared/sys/file.ts";

/** What DEL restores. Absent fields were not changed by ADD. */
export interface LinkBackup {
  mac?: string;
  promisc?: boolean;
  mtu?: number;
  allmulti?: boolean;
  txQLen?: number;
  /** Extension: /proc/sys path → value before ADD wrote it, in write order. */
  sysctlRestore?: [string, string][];
  /** Extension: the network whose ADD wrote the file (absent in files Go wrote). */
  network?: string;
}

/** `<dataDir>/<containerID>_<ifName>.json` */
export function backupPath(dataDir: string, containerID: string, ifName: string): string {
  return joinPath(dataDir, backupName(containerID, ifName));
}

/** `<containerID>_<ifName>.json` */
function backupName(containerID: string, ifName: string): string {
  return `${containerID}_${ifName}.json`;
}

/** Go's MarshalIndent with a one-space indent, in upstream's field order (plus the extension last). */
export function formatBackup(b: LinkBackup): string {
  const members: string[] = [];
  if (b.mac !== undefined && b.mac !== "") members.push(` "mac": ${goJsonString(b.mac)}`);
  if (b.promisc !== undefined) members.push(` "promisc": ${b.promisc}`);
  if (b.mtu !== undefined && b.mtu !== 0) members.push(` "mtu": ${b.mtu}`);
  if (b.allmulti !== undefined) members.push(` "allmulti": ${b.allmulti}`);
  if (b.txQLen !== undefined) members.push(` "txQLen": ${b.txQLen}`);
  if (b.sysctlRestore !== undefined && b.sysctlRestore.length > 0) {
    const inner = b.sysctlRestore.map(([k, v]) => `  ${goJsonString(k)}: ${goJsonString(v)}`);
    members.push(` "sysctlRestore": {\n${inner.join(",\n")}\n }`);
  }
  if (b.network !== undefined) members.push(` "network": ${goJsonString(b.network)}`);
  if (members.length === 0) return "{}";
  return `{\n${members.join(",\n")}\n}`;
}

/** Go's case-insensitive field lookup. */
function field(obj: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(obj, name)) return obj[name];
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === name.toLowerCase()) return v;
  return undefined;
}

/** A restorable sysctl path: absolute, clean, under /proc/sys/net/. */
function isNetSysctlPath(p: string): boolean {
  return p.startsWith("/proc/sys/net/") && !p.split("/").slice(1).some((x) => x === "" || x === "." || x === "..");
}

/**
 * Decodes a backup file's text; undefined when it is not a JSON object (upstream then restores
 * nothing). Fields of the wrong type are ignored.
 */
export function parseBackup(text: string): LinkBackup | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const o = raw as Record<string, unknown>;
  const b: LinkBackup = {};
  const mac = field(o, "mac");
  if (typeof mac === "string" && mac !== "") b.mac = mac;
  const promisc = field(o, "promisc");
  if (typeof promisc === "boolean") b.promisc = promisc;
  const mtu = field(o, "mtu");
  if (typeof mtu === "number" && Number.isInteger(mtu) && mtu !== 0) b.mtu = mtu;
  const allmulti = field(o, "allmulti");
  if (typeof allmulti === "boolean") b.allmulti = allmulti;
  const txQLen = field(o, "txQLen");
  if (typeof txQLen === "number" && Number.isInteger(txQLen)) b.txQLen = txQLen;
  const sys = field(o, "sysctlRestore");
  if (typeof sys === "object" && sys !== null && !Array.isArray(sys)) {
    const entries = Object.entries(sys as Record<string, unknown>).filter(
      (e): e is [string, string] => typeof e[1] === "string" && isNetSysctlPath(e[0]),
    );
    if (entries.length > 0) b.sysctlRestore = entries;
  }
  const network = field(o, "network");
  if (typeof network === "string") b.network = network;
  return b;
}

/**
 * Writes the backup file (0600). A missing directory is created 0700: upstream asks for 0600
 * (`os.MkdirAll(dataDir, 0o600)`), a directory without the search bit that only a process with
 * CAP_DAC_OVERRIDE can enter; 0700 gives its owner the same access and no one else any (DIFFERENCES.md).
 */
export function writeBackup(path: string, dataDir: string, b: LinkBackup): void {
  mkdirAll(dataDir, 0o700);
  writeFile(path, formatBackup(b), 0o600);
}

/** Reads the backup file: undefined when absent; `null` when present but unreadable as JSON. */
export function readBackup(path: string): LinkBackup | null | undefined {
  let text: string;
  try {
    text = readTextFile(path);
  } catch (err) {
    if (hasErrno(err, ENOENT)) return undefined;
    throw err;
  }
  return parseBackup(text) ?? null;
}

/**
 * Removes the backup file. Absent is fine, also on a file system that refuses every change (unlink
 * of a missing name there fails with EROFS, not ENOENT).
 */
export function removeBackup(path: string): void {
  if (lstatIfExists(path) === undefined) return;
  try {
    unlink(path);
  } catch (err) {
    if (!hasErrno(err, ENOENT)) throw err;
  }
}

/**
 * The backup files in `dataDir` that network `network` wrote for attachments not in `valid`
 * (GC's stale ones). Files without our `network` key (Go's, or another network's) are never
 * returned; a missing dataDir has none.
 */
export function staleBackups(dataDir: string, network: string, valid: readonly ValidAttachment[]): string[] {
  const keep = new Set(valid.map((a) => backupName(a.containerID, a.ifName)));
  let entries;
  try {
    entries = readDir(dataDir);
  } catch (err) {
    if (hasErrno(err, ENOENT)) return [];
    throw err;
  }
  const stale: string[] = [];
  for (const e of entries) {
    if (e.kind !== "file" || !e.name.endsWith(".json") || keep.has(e.name)) continue;
    const path = joinPath(dataDir, e.name);
    let b;
    try {
      b = readBackup(path);
    } catch {
      continue; // unreadable: not provably ours
    }
    if (b?.network === network) stale.push(path);
  }
  return stale;
}
