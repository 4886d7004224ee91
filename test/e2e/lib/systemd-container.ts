/**
 * A node with systemd running as PID 1, for tests of what a package does to a systemd host
 * (test/e2e/deb-systemd.test.ts), on a machine whose own PID 1 is not systemd: `systemd-nspawn
 * --boot` of this host's own root, read-only under an overlay whose upper layer is a tmpfs.
 *
 * Nothing is written to the real host. The holder, `unshare --mount` running a shell that execs
 * systemd-nspawn, makes every mount in its own mount namespace: a tmpfs over /run (systemd-nspawn
 * keeps its locks and propagation directories under /run/systemd/nspawn), a read-only bind of / (not
 * recursive: the container mounts its own /proc, /sys, /dev and /run) as the overlay's lower layer,
 * and the tmpfs upper layer. The container has its own network namespace (--private-network, only
 * a loopback), is not registered with systemd-machined (there is none) and boots `test-node.target`
 * (written into the upper layer: the basic system and sockets.target, none of the host's services
 * or timers). systemd-nspawn places the container in cgroups it makes under the holder's: the holder
 * first moves itself into a cgroup of its own per hierarchy (named after its pid), listed in a file
 * so that stop() removes them.
 *
 * Commands run in the container through `nsenter --all` into its PID 1's namespaces with its root,
 * under an empty environment but PATH (no variable of the test process, such as
 * CNI_PLUGINS_SOCKET, reaches them).
 */
import { existsSync, readFileSync, readdirSync, readlinkSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "../../harness/cleanup.ts";
import { run, show, type Ran } from "./tools.ts";

/** The container's PATH: nothing else of the caller's environment is passed. */
const CONTAINER_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const BOOT_LIMIT_MS = 60_000;
const STOP_LIMIT_MS = 30_000;

/** The target the container boots: the basic system and its sockets, no service of the host's. */
const TEST_TARGET = `[Unit]
Description=cni-plugins-ts test node
Wants=sysinit.target sockets.target
After=sysinit.target sockets.target
AllowIsolate=yes
`;

/** The holder's script: $1 the work directory on the host, $2 the machine name, then systemd-nspawn's extra arguments. */
const HOLDER_SCRIPT = `set -eu
work=$1 machine=$2; shift 2
cgroup_name=cni-ts-e2e-nspawn-$$
: > "$work/cgroups"
own_v1=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
own_v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
enter() { mkdir "$1" && echo "$1" >> "$work/cgroups" && echo $$ > "$1/cgroup.procs"; }
if [ -f /sys/fs/cgroup/systemd/cgroup.procs ]; then enter "/sys/fs/cgroup/systemd\${own_v1%/}/$cgroup_name"; fi
if [ -f /sys/fs/cgroup/unified/cgroup.procs ]; then enter "/sys/fs/cgroup/unified\${own_v2%/}/$cgroup_name"
elif [ -f /sys/fs/cgroup/cgroup.procs ]; then enter "/sys/fs/cgroup\${own_v2%/}/$cgroup_name"; fi
mount -t tmpfs -o mode=0755 cni-ts-nspawn-run /run
r=/run/cni-ts-nspawn
mkdir -p $r/lower $r/upper $r/work $r/root
mount --bind / $r/lower
mount -o remount,bind,ro $r/lower
mount -t overlay cni-ts-nspawn-root -o lowerdir=$r/lower,upperdir=$r/upper,workdir=$r/work $r/root
cp "$work/test-node.target" $r/root/etc/systemd/system/test-node.target
systemd-id128 new > $r/root/etc/machine-id
exec systemd-nspawn --quiet --directory=$r/root --machine="$machine" --boot --register=no --keep-unit \\
  --link-journal=no --private-network "$@" -- --unit=test-node.target
`;

export class ContainerError extends Error {
  override name = "ContainerError";
}

export class SystemdContainer {
  readonly #holder: ReturnType<typeof Bun.spawn>;
  readonly #work: string;
  readonly #forget: () => void;
  /** PID 1 of the container, as the host sees it. */
  readonly leader: number;

  private constructor(holder: ReturnType<typeof Bun.spawn>, work: string, leader: number, forget: () => void) {
    this.#holder = holder;
    this.#work = work;
    this.leader = leader;
    this.#forget = forget;
  }

  /**
   * Boots the container and waits until its boot has finished. `work` is an empty host directory
   * for the holder's files (its log, the cgroups it made); `binds` are host directories mounted
   * read-only in the container.
   */
  static async boot(work: string, binds: { host: string; container: string }[] = []): Promise<SystemdContainer> {
    writeFileSync(join(work, "test-node.target"), TEST_TARGET);
    const log = Bun.file(join(work, "nspawn.log"));
    const machine = `cni-ts-${process.pid}`;
    const extra = binds.map((b) => `--bind-ro=${b.host}:${b.container}`);
    const holder = Bun.spawn(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", HOLDER_SCRIPT, "sh", work, machine, ...extra], {
      stdin: "ignore",
      stdout: log,
      stderr: log,
    });
    const forget = registerCleanup(`systemd container (holder ${holder.pid})`, () => killAndRemove(holder.pid, work));
    const fail = (why: string): never => {
      forget();
      throw new ContainerError(`${why}; systemd-nspawn's output: ${readLog(work).slice(-3000)}`);
    };
    const deadline = Date.now() + BOOT_LIMIT_MS;
    let leader: number | undefined;
    while (leader === undefined && Date.now() < deadline) {
      if (holder.exitCode !== null) fail(`systemd-nspawn exited (status ${holder.exitCode}) before the container booted`);
      leader = childrenOf(holder.pid).find((pid) => isContainerInit(pid, holder.pid));
      if (leader === undefined) await Bun.sleep(50);
    }
    if (leader === undefined) return fail(`no container process within ${BOOT_LIMIT_MS / 1000} s`);
    const container = new SystemdContainer(holder, work, leader, forget);
    // systemctl answers once systemd listens (until then it fails at once); --wait then waits for the boot's end.
    let state: Ran | undefined;
    while (Date.now() < deadline) {
      state = await container.exec(["systemctl", "is-system-running", "--wait"], { timeoutMs: Math.max(1000, deadline - Date.now()) });
      if (["running", "degraded"].includes(state.stdout.trim())) return container;
      if (holder.exitCode !== null) break;
      await Bun.sleep(100);
    }
    await container.stop();
    return fail(`the container did not finish booting: ${state === undefined ? "no answer" : show(state)}`);
  }

  /** Runs `argv` in the container (its namespaces and root, an environment of PATH and `env` only). */
  exec(argv: string[], opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {}): Promise<Ran> {
    const vars = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const enter = ["nsenter", `--target=${this.leader}`, "--all", "--root", "--wd", "--", "env", "-i", CONTAINER_PATH, ...vars, ...argv];
    return run(enter, { ...(opts.stdin === undefined ? {} : { stdin: opts.stdin }), timeoutMs: opts.timeoutMs ?? 120_000 });
  }

  /** Runs `argv` in the container and returns its stdout; throws with its output when it fails. */
  async check(argv: string[], opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {}): Promise<string> {
    const r = await this.exec(argv, opts);
    if (r.status !== 0) throw new ContainerError(`${argv.join(" ")}: ${show(r)}`);
    return r.stdout;
  }

  /**
   * Shuts the container down (systemd-nspawn passes SIGTERM on as a clean halt), waits for the
   * holder to exit (its mount namespace, and every mount in it, go with it), then removes the
   * cgroups; a container that does not halt in time is killed.
   */
  async stop(): Promise<void> {
    if (this.#holder.exitCode === null) {
      this.#holder.kill("SIGTERM");
      const halted = await Promise.race([this.#holder.exited.then(() => true), Bun.sleep(STOP_LIMIT_MS).then(() => false)]);
      if (!halted) {
        killTree(this.#holder.pid);
        await this.#holder.exited;
      }
    }
    this.#forget();
  }

  /** What systemd-nspawn and the container's console printed so far. */
  get log(): string {
    return readLog(this.#work);
  }
}

function readLog(work: string): string {
  try {
    return readFileSync(join(work, "nspawn.log"), "utf8");
  } catch {
    return "";
  }
}

/** systemd, exec'd in a PID namespace other than the holder's: the container's PID 1. */
function isContainerInit(pid: number, holderPid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "systemd" && readlinkSync(`/proc/${pid}/ns/pid`) !== readlinkSync(`/proc/${holderPid}/ns/pid`);
  } catch {
    return false;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** SIGKILL to `pid` and, first, to every process below it (the container's PID 1 takes its whole PID namespace along). */
function killTree(pid: number): void {
  for (const child of childrenOf(pid)) killTree(child);
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** The cleanup step: the holder's processes killed (and waited for), then its cgroups removed, deepest first. */
function killAndRemove(holderPid: number, work: string): void {
  if (existsSync(`/proc/${holderPid}`)) {
    killTree(holderPid);
    Bun.spawnSync(["timeout", "10", "tail", `--pid=${holderPid}`, "-f", "/dev/null"]);
  }
  const made = existsSync(join(work, "cgroups")) ? readFileSync(join(work, "cgroups"), "utf8").split("\n").filter(Boolean) : [];
  for (const dir of made) removeCgroup(dir);
}

function removeCgroup(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeCgroup(join(dir, entry.name));
  // A cgroup empties a moment after its last process has exited.
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch {
      Bun.sleepSync(20);
    }
  }
  rmdirSync(dir);
}
