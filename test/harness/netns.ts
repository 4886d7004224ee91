/**
 * Container network namespaces for integration tests.
 *
 * {@link createContainerNetns} starts `unshare --net sleep infinity` and hands out
 * `/proc/<pid>/ns/net` as the namespace path (no bind mount: the namespace lives exactly as long as
 * the process). Killing the process makes the path disappear, which is how tests simulate "the
 * container's netns is gone". {@link createPersistentNetns} bind-mounts a namespace on a file in a
 * temp dir, for tests that need a path that outlives any process. Both register their teardown with
 * the fixture cleanup (see cleanup.ts), so nothing survives a failing test.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stopNodeAgent } from "./agent.ts";
import { registerCleanup } from "./cleanup.ts";
import { netnsIdOf } from "./sandbox.ts";

export interface ContainerNetns {
  /** `/proc/<pid>/ns/net`: what a runtime would pass as CNI_NETNS. */
  readonly path: string;
  /** PID of the `sleep` holding the namespace. */
  readonly pid: number;
  /** `net:[<inode>]`, to compare namespaces. */
  readonly id: string;
  /**
   * Ends the holder process (and a node agent serving the namespace, harness/agent.ts): the
   * namespace and its path go away. Safe to call twice.
   */
  destroy(): Promise<void>;
}

const READY_TIMEOUT_MS = 5000;

/** Creates a fresh network namespace held by a `sleep` child; only `lo` (DOWN) exists in it. */
export async function createContainerNetns(): Promise<ContainerNetns> {
  const own = netnsIdOf("self");
  const proc = Bun.spawn(["unshare", "--net", "--", "sleep", "infinity"], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const pid = proc.pid;
  let destroyed = false;
  const destroy = async (): Promise<void> => {
    if (destroyed) return;
    destroyed = true;
    proc.kill("SIGKILL");
    await proc.exited;
  };
  const forget = registerCleanup(`netns holder pid ${pid}`, () => {
    if (!destroyed) {
      destroyed = true;
      proc.kill("SIGKILL");
    }
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let id = netnsIdOf(pid);
  while (id === "" || id === own) {
    if (proc.exitCode !== null) {
      const err = await new Response(proc.stderr).text();
      forget();
      throw new Error(`unshare --net failed (exit ${proc.exitCode}): ${err.trim()}`);
    }
    if (Date.now() > deadline) {
      forget();
      throw new Error(`netns holder pid ${pid} did not enter a new netns within ${READY_TIMEOUT_MS} ms`);
    }
    await Bun.sleep(1);
    id = netnsIdOf(pid);
  }
  return {
    path: `/proc/${pid}/ns/net`,
    pid,
    id,
    destroy: async () => {
      await stopNodeAgent(`/proc/${pid}/ns/net`);
      await destroy();
      forget();
    },
  };
}

export interface PersistentNetns {
  /** A regular file in a temp dir with the namespace bind-mounted on it. */
  readonly path: string;
  /** Unmounts and removes it; the path then no longer exists. Safe to call twice. */
  destroy(): void;
}

/** Creates a namespace bind-mounted on `<tmp>/netns` (like `ip netns add`, without /run/netns). */
export function createPersistentNetns(): PersistentNetns {
  const dir = mkdtempSync(join(tmpdir(), "cni-test-netns-"));
  const path = join(dir, "netns");
  writeFileSync(path, "", { mode: 0o444 });
  const made = Bun.spawnSync(["unshare", `--net=${path}`, "--", "true"], { stderr: "pipe" });
  if (made.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`unshare --net=${path} failed: ${made.stderr.toString().trim()}`);
  }
  let destroyed = false;
  const destroy = (): void => {
    if (destroyed) return;
    destroyed = true;
    const umount = Bun.spawnSync(["umount", path], { stderr: "pipe" });
    if (umount.exitCode !== 0) {
      // Lazy detach as a last resort, so the temp dir can still go.
      Bun.spawnSync(["umount", "--lazy", path]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const forget = registerCleanup(`persistent netns ${path}`, destroy);
  return {
    path,
    destroy: () => {
      destroy();
      forget();
    },
  };
}
