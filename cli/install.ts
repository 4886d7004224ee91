/**
 * `cni-plugins install --dest DIR`: puts this executable, the exec shim beside it and one name per
 * plugin into a CNI bin directory while a container runtime may be executing plugins from it (the
 * DaemonSet init-container pattern of flannel's and calico's install-cni; deploy/daemonset.yaml runs
 * it on every node).
 *
 * - Every file appears under its final name only by `rename(2)` of a complete, fsynced file written
 *   next to it (a temporary name in the same directory): kubelet can never exec a half-written
 *   executable, and an executable being run is never written to (no ETXTBSY).
 * - A name that already holds this very file (same inode) or identical bytes is left alone, so a
 *   second run changes nothing.
 * - Only `cni-plugins`, `cni-plugins-shim` and the plugin names of this build are touched; other
 *   files in DIR stay.
 * - Each plugin name is a hard link to DIR/cni-plugins-shim (docs/resident.md: it forwards to the
 *   resident agent, or runs DIR/cni-plugins, which dispatches on the name); where the file system
 *   refuses hard links, a copy is written instead. Without a shim beside the source (a build of
 *   the executable alone), the names link to DIR/cni-plugins itself.
 * - The executables are written before the names are repointed: a name in use always finds a
 *   complete pair (an old shim falls back to the new executable at worst).
 * - Leftover temporary files of an interrupted earlier run are removed first.
 */
import {
  closeSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from "node:fs";
import { dirname, join } from "node:path";

/** The multi-call executable's own name in the destination. */
export const BINARY_NAME = "cni-plugins";
/** The exec shim's own name, beside the executable in the source and the destination. */
export const SHIM_NAME = "cni-plugins-shim";
/** Prefix of the temporary names; never a plugin name (CNI types cannot start with a dot here). */
const TEMP_PREFIX = ".cni-plugins-install.";
const CHUNK = 1 << 20;

export interface InstallPlan {
  /** The executable to install (the running binary for the `install` command). */
  source: string;
  /** The exec shim to install with it; undefined: none (the names link to the executable). */
  shim?: string | undefined;
  /** The CNI bin directory; created when missing. */
  dest: string;
  /** Plugin names to provide as links to `dest/cni-plugins-shim` (to `dest/cni-plugins` without a shim). */
  names: readonly string[];
}

export interface InstallReport {
  /** Names written (new or replaced), in order. */
  written: string[];
  /** Names that already held identical content. */
  unchanged: string[];
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

function sameInode(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** True when both regular files hold the same bytes (sizes first, then a chunked comparison). */
export function sameContent(a: string, b: string): boolean {
  const sa = statSync(a);
  const sb = statSync(b);
  if (sameInode(sa, sb)) return true;
  if (sa.size !== sb.size) return false;
  const fa = openSync(a, "r");
  try {
    const fb = openSync(b, "r");
    try {
      const ba = Buffer.allocUnsafe(CHUNK);
      const bb = Buffer.allocUnsafe(CHUNK);
      for (;;) {
        const na = readFully(fa, ba);
        const nb = readFully(fb, bb);
        if (na !== nb) return false;
        if (na === 0) return true;
        if (ba.compare(bb, 0, nb, 0, na) !== 0) return false;
      }
    } finally {
      closeSync(fb);
    }
  } finally {
    closeSync(fa);
  }
}

/** Fills `buf` from the current offset unless EOF comes first; returns the byte count. */
function readFully(fd: number, buf: Buffer): number {
  let n = 0;
  while (n < buf.length) {
    const got = readSync(fd, buf, n, buf.length - n, null);
    if (got === 0) break;
    n += got;
  }
  return n;
}

/** A fresh temporary name next to `name` (PIDs repeat across containers, so a random part too). */
function tempPath(dest: string, name: string): string {
  return join(dest, `${TEMP_PREFIX}${name}.${process.pid}.${Math.random().toString(36).slice(2, 10)}`);
}

/** Copies `source` to the new file `target` (mode 0755), fsynced and closed. */
function writeCopy(source: string, target: string): void {
  const out = openSync(target, "wx", 0o755);
  try {
    const input = openSync(source, "r");
    try {
      const buf = Buffer.allocUnsafe(CHUNK);
      for (;;) {
        const n = readFully(input, buf);
        if (n === 0) break;
        let off = 0;
        while (off < n) off += writeSync(out, buf, off, n - off);
      }
    } finally {
      closeSync(input);
    }
    fsyncSync(out);
  } finally {
    closeSync(out);
  }
}

/** Error codes of file systems that cannot hard-link (the name is then a copy). */
const NO_HARD_LINKS = new Set(["EPERM", "EXDEV", "ENOTSUP", "EOPNOTSUPP", "EMLINK"]);

/** Places `name` as a link to (or, failing that, a copy of) `binary`, atomically. */
function placeLink(dest: string, name: string, binary: string): void {
  const tmp = tempPath(dest, name);
  try {
    linkSync(binary, tmp);
  } catch (err) {
    if (!NO_HARD_LINKS.has((err as NodeJS.ErrnoException).code ?? "")) throw err;
    writeCopy(binary, tmp);
  }
  renameSync(tmp, join(dest, name));
}

/** Makes the renames in `dir` durable. */
function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Removes temporary files an interrupted run left in `dest` (only ours, by prefix). */
function removeStaleTemps(dest: string): void {
  for (const entry of readdirSync(dest)) {
    if (entry.startsWith(TEMP_PREFIX)) rmSync(join(dest, entry), { force: true });
  }
}

/** Puts a copy of `source` at `dest`/`name` unless it already holds the same bytes; returns its path. */
function placeFile(dest: string, name: string, source: string, report: InstallReport): string {
  if (!statSync(source).isFile()) throw new Error(`${source} is not a regular file`);
  const target = join(dest, name);
  const current = lstatOrUndefined(target);
  if (current?.isFile() && sameContent(source, target)) {
    report.unchanged.push(name);
  } else {
    const tmp = tempPath(dest, name);
    writeCopy(source, tmp);
    renameSync(tmp, target);
    report.written.push(name);
  }
  return target;
}

/** Installs the binary and its plugin names into `plan.dest`; see the file's doc for the rules. */
export function installPlugins(plan: InstallPlan): InstallReport {
  const report: InstallReport = { written: [], unchanged: [] };
  mkdirSync(plan.dest, { recursive: true });
  removeStaleTemps(plan.dest);

  const binary = placeFile(plan.dest, BINARY_NAME, plan.source, report);
  const linked = plan.shim === undefined ? binary : placeFile(plan.dest, SHIM_NAME, plan.shim, report);
  const installed = statSync(linked);

  for (const name of plan.names) {
    const target = join(plan.dest, name);
    const existing = lstatOrUndefined(target);
    if (existing?.isFile() && (sameInode(existing, installed) || sameContent(linked, target))) {
      report.unchanged.push(name);
      continue;
    }
    placeLink(plan.dest, name, linked);
    report.written.push(name);
  }
  if (report.written.length > 0) fsyncDir(plan.dest);
  return report;
}

const USAGE =
  `usage: ${BINARY_NAME} install --dest DIR [--source FILE]\n` +
  `  Installs ${BINARY_NAME}, ${SHIM_NAME} and a link to the shim per plugin name into DIR (e.g.\n` +
  `  /opt/cni/bin), atomically; identical files are skipped and other files in DIR are left alone.\n` +
  `  FILE defaults to this executable; the shim is the ${SHIM_NAME} beside it (without one, the names\n` +
  `  link to ${BINARY_NAME} itself).\n`;

/** The `install` command: parses `argv` (after the word `install`), installs, reports. Exit status. */
export function runInstallCommand(
  argv: readonly string[],
  names: readonly string[],
  out: (text: string) => void,
  err: (text: string) => void,
): number {
  let dest: string | undefined;
  let source = process.execPath;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    if (flag === "--dest") dest = value();
    else if (flag === "--source") source = value() ?? "";
    else if (flag === "-h" || flag === "--help") {
      out(USAGE);
      return 0;
    } else {
      err(`${BINARY_NAME} install: unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
      return 2;
    }
  }
  if (dest === undefined || dest === "" || source === "") {
    err(`${BINARY_NAME} install: --dest is required\n${USAGE}`);
    return 2;
  }
  try {
    const shim = join(dirname(source), SHIM_NAME);
    const report = installPlugins({ source, shim: lstatOrUndefined(shim)?.isFile() ? shim : undefined, dest, names });
    for (const name of report.written) out(`installed ${join(dest, name)}\n`);
    out(`${BINARY_NAME} install: ${report.written.length} written, ${report.unchanged.length} unchanged in ${dest}\n`);
    return 0;
  } catch (e) {
    err(`${BINARY_NAME} install: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}
