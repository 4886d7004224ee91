/**
 * The on-disk reservation store, byte-compatible with upstream `backend/disk/backend.go` so Go and
 * TypeScript plugins can share `/var/lib/cni/networks` (e.g. during an upgrade):
 *
 * - `<dataDir>/<network>/` (mode 0755), locked with flock(2) on `<dir>/lock` — the very file the
 *   Go plugin locks, so the two never allocate concurrently;
 * - one file per reserved address, named by Go's text of the IP (`10.1.2.3`, `fd00::2`), mode 0600,
 *   holding `<containerID>\r\n<ifname>` without a newline;
 * - `last_reserved_ip.<rangeSetIndex>` (0600) holding the IP text of the last reservation.
 *
 * ## Crash safety and planted links
 *
 * Go creates a reservation with O_EXCL and then writes it, so a crash in between leaves an empty
 * file that holds the address for ever (upstream #498). Here the content is first written to the
 * scratch file `.host-local.tmp` (dir-view.ts TEMP_NAME) and then link(2)ed to the address name,
 * which fails with EEXIST when the name exists — the exclusivity O_EXCL gives Go, under the same
 * flock — so a reservation never exists without its content. An empty reservation file met under
 * the lock can only be such a Go crash leftover (every writer fills its file before unlocking) and
 * is reclaimed when its address is wanted; a scratch file left by a crash is removed by the next
 * scan. `last_reserved_ip.<n>` and the owner index are replaced by rename, never written in place
 * through whatever is at their name, and every file is opened with O_NOFOLLOW: a symbolic link
 * planted in the directory is never followed (the lock file then cannot be opened, a reservation
 * name reads as unreadable and keeps its address).
 *
 * A reservation that cannot be removed (read-only or failing disk) is an error, unlike upstream,
 * which ignores it and so loses the address for good; the next DEL removes it.
 *
 * ## Finding a container's reservations without reading every file
 *
 * A reservation file is named by its IP; its owner is only in its content. Upstream therefore
 * reads every file of the directory for each CHECK, DEL and duplicate check. Here an owner index
 * (`.host-local-owners`, see index-file.ts) caches name → owner key. Go never writes it and does
 * not know about it, so it is only ever a hint, and is used like this (always under the lock):
 *
 * 1. **Trusted**: when the directory's mtime equals the stamp recorded in the index. After
 *    writing the index we set the directory's mtime to a second in the past and record the value
 *    the filesystem stored; any later create, unlink or rename in the directory — by Go, by an
 *    admin, by a crashed TypeScript run — moves the mtime to "now", which cannot equal the stamp
 *    (whatever the timestamp granularity). Reservation files are never rewritten in place (Go
 *    writes one only right after creating it, under the lock; here it is linked in complete; both
 *    only ever unlink them), so an unchanged entry list means unchanged owners. Cost: one stat, one read of the index and a substring search in it (no
 *    parse of its entries); a new reservation appends one line to it (index-file.ts).
 * 2. **Verified** otherwise (mtime moved, index missing, torn or from another version): list the
 *    directory once (dir-view.ts scanDirectory); keep an index line only if the file is proven
 *    unchanged, read every other file, drop the lines of files gone. Proof, per session:
 *    - *by stat* (CHECK, DEL, GC, STATUS): lstat shows the line's inode, ctime and size *and* the
 *      file was already more than 2 s old when it was read (so a replacement within one timestamp
 *      tick cannot look identical). Exact; the picture is saved back stamped (trusted).
 *    - *by listing* (an allocation, lock(true)): the directory entry names the line's inode; no
 *      call per file, so an ADD after another writer's change costs one listing, not a stat of
 *      every file. Names (all an allocation needs to pick a free address) are exact; an owner is
 *      not when another writer released a file and re-created the name for another container
 *      with the freed inode number (ext4 and xfs reuse them). The picture is saved back without a
 *      stamp, so the next session verifies again, and DEL, CHECK and GC by stat.
 *    Subdirectories (never created by Go, but honoured by its recursive walk) are always re-read.
 * 3. Before unlinking a file on the strength of the index, its content is read again; a mismatch
 *    discards the picture, rescans everything and redoes the operation.
 *
 * Safety does not rest on the index for allocation: a reservation is always an exclusive link(2),
 * so a Go-reserved address can never be handed out twice. The index may only let us skip the
 * link for names known to exist. An allocation that passes thousands of taken addresses tests
 * each against the picture in O(1) (index-file.ts indexes its lines by name after a few lookups),
 * without a file-system call.
 *
 * Known limits (documented, not bugs): a reservation file rewritten in place by hand (not by any
 * plugin) stays invisible to CHECK and the duplicate check until the directory changes; DEL and GC
 * still re-read before unlinking, so they never remove the wrong file. The duplicate check of an
 * ADD right after another writer's change sees owners as verified by listing (above): an ADD
 * repeated for an attachment whose first ADD was the Go plugin's, in a file that recycled a
 * released file's name and inode, gets a second address instead of the spec's error; the
 * attachment's DEL (verified by stat) releases both. A wall clock stepped back
 * so that a later change lands on exactly the recorded nanosecond stamp would hide that change.
 * `make bench` times an ADD at 5,000 and 20,000 reservations, and one that passes 5,000 taken
 * addresses after a foreign change, next to the Go plugin (docs/performance.md).
 */
import { O_NOFOLLOW, O_RDONLY } from "../../../shared/sys/constants.ts";
import {
  createFresh,
  fstat,
  joinPath,
  link,
  lstatIfExists,
  mkdirAll,
  readTextFile,
  replaceFile,
  statIfExists,
  unlink,
  unlinkIfExists,
  writeAll,
} from "../../../shared/sys/file.ts";
import { close } from "../../../shared/sys/libc.ts";
import { InternalError, InvalidConfigError } from "../../../shared/cni/errors.ts";
import { PathError } from "../../../shared/sys/path-error.ts";
import type { LockWaiter } from "../../../shared/sys/lock-waiter.ts";
import { FileLock } from "../../../shared/sys/flock.ts";
import { formatIP, parseIP, type IPAddr } from "../../../shared/ip/addr.ts";
import { DirView, isStable, LAST_RESERVED_PREFIX, LOCK_NAME, readEntry, scanDirectory, TEMP_NAME, type Verification } from "./dir-view.ts";
import { appendIndexFile, IndexBody, IndexCorruptError, NO_STAMP, readIndexFile, writeIndexFile } from "./index-file.ts";
import { goTrimSpace, legacyKey, reservationContent } from "./owner.ts";
import type { Store, StoredReservation } from "./store.ts";

export const DEFAULT_DATA_DIR = "/var/lib/cni/networks";

/** The lock the store needs (satisfied by shared/sys FileLock). */
export interface StoreLock {
  /** `waiter`: how a wait for the lock ends (shared/sys/fd-lock.ts). */
  lock(waiter?: LockWaiter): void;
  unlock(): void;
  close(): void;
}

export interface DiskStoreOptions {
  /** Opens the lock file; default FileLock.open (flock, shared with Go). */
  openLock?: (path: string) => StoreLock;
  /** How a wait for the lock ends: the call's scope (CmdArgs.scope.lockWaiter); none in a plugin process. */
  lockWaiter?: LockWaiter | undefined;
  /** Wall clock in milliseconds; default Date.now. */
  nowMs?: () => number;
  /** Use the owner index (default true); false behaves like upstream: read every file. */
  ownerIndex?: boolean;
}

/** Counters, for tests and benchmarks. */
export interface DiskStoreStats {
  /** Views built from a trusted index without touching reservation files. */
  trustedLoads: number;
  /** Views built by scanning the directory. */
  scans: number;
  /** Reservation files read while scanning. */
  filesRead: number;
}

/** Network names become a directory name: one safe path component (skel's rule). */
const NETWORK_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** Reservation names are Go IP text. */
const IP_NAME = /^[0-9a-f.:]+$/;

/** A Go-style `<op> <path>: <errno text>` failure (code 999, as upstream's *PathError). */
export function fsError(op: string, path: string, err: unknown): InternalError {
  const failure = new PathError(op, path, err);
  return new InternalError(failure.message, { cause: failure });
}

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === code;
}

/** The directory of one network's reservations. */
export function networkDir(network: string, dataDir: string): string {
  if (!NETWORK_NAME.test(network)) throw new InvalidConfigError("invalid characters found in network name");
  return joinPath(dataDir === "" ? DEFAULT_DATA_DIR : dataDir, network);
}

export class DiskStore implements Store {
  readonly dir: string;
  readonly stats: DiskStoreStats = { trustedLoads: 0, scans: 0, filesRead: 0 };
  readonly #lock: StoreLock;
  readonly #lockWaiter: LockWaiter | undefined;
  readonly #nowMs: () => number;
  readonly #useIndex: boolean;
  #locked = false;
  /** This lock session only allocates (see lock). */
  #forAllocation = false;
  #view: DirView | null = null;
  /** The view came from the index file as it is on disk (trusted): new lines may be appended. */
  #viewIsIndexFile = false;
  /** This lock session created or removed a file in the directory. */
  #changedDir = false;

  private constructor(dir: string, lock: StoreLock, opts: DiskStoreOptions) {
    this.dir = dir;
    this.#lock = lock;
    this.#lockWaiter = opts.lockWaiter;
    this.#nowMs = opts.nowMs ?? Date.now;
    this.#useIndex = opts.ownerIndex ?? true;
  }

  /** Opens (creating if needed, like upstream) the store of `network` under `dataDir`. */
  static open(network: string, dataDir: string, opts: DiskStoreOptions = {}): DiskStore {
    const dir = networkDir(network, dataDir);
    try {
      mkdirAll(dir, 0o755);
    } catch (err) {
      throw fsError("mkdir", dir, err);
    }
    return DiskStore.#openLock(dir, opts);
  }

  /** Opens the store only if its directory exists (STATUS and GC must not create anything). */
  static openExisting(network: string, dataDir: string, opts: DiskStoreOptions = {}): DiskStore | null {
    const dir = networkDir(network, dataDir);
    const st = statIfExists(dir);
    if (st === undefined) return null;
    if (!st.isDirectory()) throw new InternalError(`open ${dir}: not a directory`);
    return DiskStore.#openLock(dir, opts);
  }

  static #openLock(dir: string, opts: DiskStoreOptions): DiskStore {
    const path = joinPath(dir, LOCK_NAME);
    const openLock = opts.openLock ?? ((p: string) => FileLock.open(p));
    let lock: StoreLock;
    try {
      lock = openLock(path);
    } catch (err) {
      throw fsError("open", path, err);
    }
    return new DiskStore(dir, lock, opts);
  }

  lock(forAllocation = false): void {
    this.#lock.lock(this.#lockWaiter);
    this.#locked = true;
    this.#forAllocation = forAllocation;
    this.#view = null;
    this.#changedDir = false;
  }

  unlock(): void {
    if (!this.#locked) return;
    try {
      this.#persist();
    } finally {
      this.#view = null;
      this.#locked = false;
      this.#lock.unlock();
    }
  }

  close(): void {
    try {
      this.unlock();
    } finally {
      this.#lock.close();
    }
  }

  #path(name: string): string {
    return joinPath(this.dir, name);
  }

  #nowNs(): bigint {
    return BigInt(Math.floor(this.#nowMs())) * 1_000_000n;
  }

  /** The picture of the directory for this lock session (built on first use). */
  #getView(): DirView {
    if (!this.#locked) throw new Error("host-local store used without its lock");
    if (this.#view !== null) return this.#view;
    let previous: IndexBody | null = null;
    if (this.#useIndex) {
      const index = readIndexFile(this.dir);
      if (index !== null) {
        const mtime = statIfExists(this.dir)?.mtimeNs;
        if (index.stamp !== NO_STAMP && index.stamp === mtime && !index.nested) {
          this.stats.trustedLoads++;
          this.#view = new DirView(index.body, false);
          this.#viewIsIndexFile = true;
          return this.#view;
        }
        previous = index.body;
      }
    }
    this.#view = this.#scan(previous, this.#forAllocation ? "listing" : "stat");
    return this.#view;
  }

  /**
   * Runs `f` on the picture. A malformed line met in a trusted index (only a foreign edit of the
   * index could make one) discards the picture: the directory is scanned and `f` runs again.
   */
  #withView<T>(f: (view: DirView) => T): T {
    try {
      return f(this.#getView());
    } catch (err) {
      if (!(err instanceof IndexCorruptError)) throw err;
      this.#rescanFully();
      return f(this.#getView());
    }
  }

  #scan(previous: IndexBody | null, verification: Verification): DirView {
    let result;
    try {
      result = scanDirectory(this.dir, previous, verification, this.#nowNs());
    } catch (err) {
      throw fsError("open", this.dir, err);
    }
    this.stats.scans++;
    this.stats.filesRead += result.filesRead;
    if (result.sawTemp) this.#removeQuietly(this.#path(TEMP_NAME)); // a crash leftover
    const view = result.view;
    view.dirty = true;
    view.unproven = !result.exact;
    this.#viewIsIndexFile = false;
    return view;
  }

  /**
   * Writes the view back as the owner index (best effort: it is only a cache). New reservations
   * of a session that read the index as trusted are appended; anything else rewrites the file.
   */
  #persist(): void {
    const view = this.#view;
    if (!this.#useIndex || view === null || (!view.dirty && !view.unproven)) return;
    try {
      const appended = this.#viewIsIndexFile && this.#changedDir && !view.unproven ? view.appendedLines() : null;
      if (appended !== null) appendIndexFile(this.dir, view.nested, appended, this.#nowMs());
      else writeIndexFile(this.dir, view.nested, view.body(), this.#nowMs(), !view.unproven);
    } catch {
      // A stale index is harmless: its stamp no longer matches the directory.
    }
  }

  reserve(id: string, ifname: string, ip: IPAddr, rangeID: string): boolean {
    const name = formatIP(ip);
    const view = this.#getView();
    const holding = view.holding(name);
    if (holding === "held") return false; // the usual answer while passing taken addresses: no I/O
    if (!IP_NAME.test(name)) throw new InternalError(`refusing reservation name ${JSON.stringify(name)}`);
    if (holding === "empty" && !this.#reclaimEmpty(name)) return false;
    const path = this.#path(name);
    const tmp = this.#path(TEMP_NAME);
    const content = reservationContent(id, ifname);
    let fd: number;
    try {
      fd = createFresh(tmp, 0o600);
    } catch (err) {
      throw fsError("open", tmp, err);
    }
    this.#changedDir = true;
    let identity: { ino: string; ctimeNs: string; size: number; stable: boolean };
    let tmpRemoved = false;
    try {
      try {
        writeAll(fd, content);
      } catch (err) {
        throw fsError("write", tmp, err);
      }
      if (!this.#linkReservation(tmp, path, name)) {
        view.unproven = true; // someone holds it although the picture said free
        return false;
      }
      try {
        unlink(tmp);
        tmpRemoved = true;
      } catch (err) {
        this.#removeQuietly(path);
        throw fsError("remove", tmp, err);
      }
      // Taken after link and unlink, which both changed the inode's ctime.
      const st = fstat(fd);
      identity = { ino: st.ino.toString(), ctimeNs: st.ctimeNs.toString(), size: st.size, stable: isStable(st.ctimeNs, this.#nowNs()) };
    } finally {
      close(fd);
      if (!tmpRemoved) this.#removeQuietly(tmp);
    }
    view.add({ name, ...identity, key: goTrimSpace(content) });
    view.dirty = true;

    const lastPath = this.#path(LAST_RESERVED_PREFIX + rangeID);
    try {
      replaceFile(lastPath, name, 0o600, tmp);
    } catch (err) {
      // Unlike upstream, do not leave the reservation behind when the bookkeeping fails.
      this.#removeQuietly(path);
      view.remove(name);
      throw fsError("open", lastPath, err);
    }
    return true;
  }

  /**
   * Gives the filled scratch file its address name; false when the name is taken. A name held by
   * an empty file (a crash leftover, see the header) is reclaimed once.
   */
  #linkReservation(tmp: string, path: string, name: string): boolean {
    for (let attempt = 0; ; attempt++) {
      try {
        link(tmp, path);
        return true;
      } catch (err) {
        if (!isErrno(err, "EEXIST")) throw fsError("link", path, err);
        if (attempt > 0 || !this.#reclaimEmpty(name)) return false;
      }
    }
  }

  /** Removes the reservation file `name` if it is an empty regular file (or already gone); true when it did. */
  #reclaimEmpty(name: string): boolean {
    const st = lstatIfExists(this.#path(name));
    if (st !== undefined && (!st.isFile() || st.size !== 0)) return false;
    this.#remove(name);
    return true;
  }

  #removeQuietly(path: string): void {
    try {
      unlinkIfExists(path);
      this.#changedDir = true;
    } catch {
      // nothing else to do
    }
  }

  lastReservedIP(rangeID: string): IPAddr | null {
    try {
      // Like upstream: the whole content must be an IP (no trimming).
      return parseIP(readTextFile(this.#path(LAST_RESERVED_PREFIX + rangeID), O_RDONLY | O_NOFOLLOW));
    } catch {
      return null;
    }
  }

  #namesFor(id: string, ifname: string): { current: string[]; legacy: string[] } {
    return this.#withView((view) => ({
      current: view.namesWithKey(reservationContent(id, ifname)),
      legacy: view.namesWithKey(legacyKey(id)),
    }));
  }

  getByID(id: string, ifname: string): IPAddr[] {
    const { current, legacy } = this.#namesFor(id, ifname);
    const out: IPAddr[] = [];
    for (const name of [...current, ...legacy]) {
      const ip = parseIP(name.slice(name.lastIndexOf("/") + 1));
      if (ip !== null) out.push(ip);
    }
    return out;
  }

  findByID(id: string, ifname: string): boolean {
    const { current, legacy } = this.#namesFor(id, ifname);
    return current.length > 0 || legacy.length > 0;
  }

  releaseByID(id: string, ifname: string): void {
    for (let attempt = 0; ; attempt++) {
      const outcome = this.#releaseMatching(reservationContent(id, ifname));
      if (outcome === "stale" && attempt === 0) {
        this.#rescanFully();
        continue;
      }
      if (outcome !== "none") return;
      const legacy = this.#releaseMatching(legacyKey(id));
      if (legacy === "stale" && attempt === 0) {
        this.#rescanFully();
        continue;
      }
      return;
    }
  }

  /** Rebuilds the picture by reading every file (used when the picture proved wrong). */
  #rescanFully(): void {
    this.#view = this.#scan(null, "stat");
  }

  /**
   * Unlinks every file whose content is `key`, re-reading each first. "stale" when a file's content
   * disagreed with the picture (nothing more was touched), "none" when nothing was found. Files
   * that cannot be removed are skipped, and one error naming all of them is thrown at the end.
   */
  #releaseMatching(key: string): "removed" | "none" | "stale" {
    const names = this.#withView((v) => v.namesWithKey(key));
    const view = this.#getView();
    const failures: string[] = [];
    for (const name of names) {
      const fresh = readEntry(this.dir, name, this.#nowNs());
      if (fresh === undefined || fresh.key !== key) {
        view.unproven = true;
        return "stale";
      }
      try {
        this.#remove(name);
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    if (failures.length > 0) throw new InternalError(failures.join("; "));
    return names.length > 0 ? "removed" : "none";
  }

  /** Unlinks the reservation `name` (already gone counts as removed); throws a Go-style `remove <path>: <errno>`. */
  #remove(name: string): void {
    const path = this.#path(name);
    try {
      unlinkIfExists(path);
    } catch (err) {
      throw fsError("remove", path, err);
    }
    this.#changedDir = true;
    const view = this.#getView();
    view.remove(name);
    view.dirty = true;
  }

  reservations(): StoredReservation[] {
    const out: StoredReservation[] = [];
    for (const e of this.#withView((v) => v.entries())) {
      if (e.name.includes("/")) continue;
      const ip = parseIP(e.name);
      if (ip === null || formatIP(ip) !== e.name) continue;
      out.push({ ip, key: e.key });
    }
    return out;
  }

  releaseReservation(r: StoredReservation): boolean {
    const name = formatIP(r.ip);
    const view = this.#getView();
    const fresh = readEntry(this.dir, name, this.#nowNs());
    if (fresh === undefined) {
      if (view.has(name)) {
        view.remove(name);
        view.unproven = true;
      }
      return false;
    }
    if (fresh.key !== r.key) {
      view.add(fresh);
      view.unproven = true;
      return false;
    }
    this.#remove(name);
    return true;
  }
}
