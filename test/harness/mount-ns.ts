/**
 * A private mount namespace for tests that need a filesystem to fail (a directory bind-mounted
 * read-only) without touching the host's mounts: `unshare --mount --propagation private` runs a
 * `sleep` that holds the namespace; commands and plugins enter it with `nsenter --mount`. Killing
 * the holder (a registered cleanup step) drops the namespace and every mount made in it, so a
 * crashed test leaves nothing behind. The directories themselves stay visible, writable, to the
 * test process in the host mount namespace.
 */
import { readlinkSync } from "node:fs";
import { registerCleanup } from "./cleanup.ts";

export class PrivateMountNs {
  readonly pid: number;
  readonly #stop: () => void;

  private constructor(pid: number, stop: () => void) {
    this.pid = pid;
    this.#stop = stop;
  }

  /** Starts the holder and waits until it is in its own mount namespace. */
  static async start(): Promise<PrivateMountNs> {
    const proc = Bun.spawn(["unshare", "--mount", "--propagation", "private", "sleep", "infinity"], { stdout: "ignore", stderr: "inherit" });
    const stop = registerCleanup(`mount namespace holder ${proc.pid}`, () => {
      proc.kill("SIGKILL");
    });
    const own = readlinkSync("/proc/self/ns/mnt");
    for (let i = 0; i < 200; i++) {
      let ns: string | undefined;
      try {
        ns = readlinkSync(`/proc/${proc.pid}/ns/mnt`);
      } catch {
        ns = undefined;
      }
      if (ns !== undefined && ns !== own) return new PrivateMountNs(proc.pid, stop);
      if (proc.exitCode !== null) break;
      await Bun.sleep(10);
    }
    stop();
    throw new Error(`unshare --mount did not start (exit ${proc.exitCode})`);
  }

  /** The command prefix that runs a program in this namespace. */
  get prefix(): string[] {
    return ["nsenter", `--mount=/proc/${this.pid}/ns/mnt`, "--"];
  }

  /** Runs `argv` in the namespace; throws with its stderr when it fails. */
  run(argv: string[]): void {
    const r = Bun.spawnSync([...this.prefix, ...argv], { stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: exit ${r.exitCode}: ${r.stderr.toString()}`);
  }

  /** Makes `dir` read-only (true) or writable again (false) inside the namespace only. */
  setReadOnly(dir: string, readOnly: boolean): void {
    if (readOnly) this.run(["mount", "--bind", dir, dir]);
    this.run(["mount", "-o", `remount,bind,${readOnly ? "ro" : "rw"}`, dir]);
  }

  /** Ends the namespace (and its mounts). */
  close(): void {
    this.#stop();
  }
}
