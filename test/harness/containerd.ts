/**
 * A private containerd (Debian's 1.6) for the e2e lane and `make bench`: its own root, state,
 * socket and CNI configuration, `cni.bin_dir` = the plugin directory under test, started and
 * stopped by its pid, driven over CRI by rc-crictl (test/e2e/setup/prepare.sh builds it). The pod
 * sandbox image is made offline from a static busybox (a one-layer Docker archive imported with
 * `ctr images import`). Notes from running it here: `restrict_oom_score_adj = true` (no
 * CAP_SYS_RESOURCE), runc, cgroupfs.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ContainerdOptions {
  /** Root for its content and snapshots, its config and its log (kept between runs). */
  state: string;
  /** Runtime state and the sockets (a fresh tmpfs is mounted here). */
  rundir: string;
  /** CNI bin_dir and conf_dir. */
  binDir: string;
  confDir: string;
  sandboxImage: string;
  /** Added to containerd's environment, which libcni passes on to every plugin. */
  env?: Record<string, string>;
  /**
   * Run containerd (and so runc and the plugins it starts) with the normal scheduling policy even
   * when the caller is real-time (`make bench`): runc cannot put a real-time task into a cgroup v1
   * cpu controller without an RT budget.
   */
  normalPriority?: boolean;
}

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Containerd {
  socket: string;
  crictl(rcCrictl: string, args: string[]): Promise<Ran>;
  ctr(args: string[]): Promise<Ran>;
  stop(): Promise<void>;
}

async function run(argv: string[], env: Record<string, string> = {}): Promise<Ran> {
  const started = performance.now();
  const proc = Bun.spawn(argv, { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 120_000, killSignal: "SIGKILL" });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { status: proc.exitCode, stdout, stderr, ms: performance.now() - started };
}

function config(o: ContainerdOptions, socket: string): string {
  return `version = 2
root = "${o.state}/root"
state = "${o.rundir}/state"
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${o.state}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${o.sandboxImage}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${o.binDir}"
    conf_dir = "${o.confDir}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`;
}

/** Starts containerd with `o` and waits until it answers; throws with its log when it does not. */
export async function startContainerd(o: ContainerdOptions): Promise<Containerd> {
  mkdirSync(o.state, { recursive: true });
  mkdirSync(o.rundir, { recursive: true });
  Bun.spawnSync(["mount", "-t", "tmpfs", "cni-test-containerd", o.rundir]);
  const socket = join(o.rundir, "containerd.sock");
  writeFileSync(join(o.state, "config.toml"), config(o, socket));
  const log = join(o.state, "containerd.log");
  const daemon = Bun.spawn([...(o.normalPriority ? ["chrt", "--other", "0"] : []), "containerd", "--config", join(o.state, "config.toml")], {
    cwd: "/tmp",
    env: { ...process.env, ...o.env },
    stdout: "ignore",
    stderr: Bun.file(log),
  });
  const ctr = (args: string[]) => run(["ctr", "--address", socket, ...args]);
  const handle: Containerd = {
    socket,
    ctr,
    crictl: (rcCrictl, args) => run([rcCrictl, ...args], { CONTAINER_RUNTIME_ENDPOINT: `unix://${socket}` }),
    async stop() {
      daemon.kill("SIGTERM");
      await daemon.exited;
      Bun.spawnSync(["umount", "-l", o.rundir]);
    },
  };
  for (let i = 0; i < 100 && daemon.exitCode === null; i++) {
    if ((await ctr(["version"])).status === 0) return handle;
    await Bun.sleep(100);
  }
  await handle.stop();
  throw new Error(`containerd did not start: ${readFileSync(log, "utf8").slice(-2000)}`);
}

/** Go's name of this machine's architecture (the image config's `architecture`). */
function goArch(): string {
  return process.arch === "x64" ? "amd64" : process.arch;
}

/**
 * Makes `image` (a pod sandbox: `/bin/sleep` of a static `busybox`, for ever) available in the
 * `k8s.io` namespace of `c`, unless it is there; `workDir` holds the archive. Undefined, or what
 * went wrong.
 */
export async function ensureSandboxImage(c: Containerd, image: string, busybox: string, workDir: string): Promise<string | undefined> {
  const have = (await c.ctr(["-n", "k8s.io", "images", "ls", "-q"])).stdout.split("\n");
  if (have.includes(image)) return undefined;
  const dir = join(workDir, "sandbox-image");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "rootfs", "bin"), { recursive: true });
  Bun.spawnSync(["cp", busybox, join(dir, "rootfs", "bin", "busybox")]);
  Bun.spawnSync(["ln", "-s", "busybox", join(dir, "rootfs", "bin", "sleep")]);
  const layer = join(dir, "layer.tar");
  const tar = Bun.spawnSync(["tar", "-C", join(dir, "rootfs"), "--owner=0", "--group=0", "-cf", layer, "."]);
  if (tar.exitCode !== 0) return `tar of the sandbox image failed: ${tar.stderr.toString()}`;
  const diffId = createHash("sha256").update(readFileSync(layer)).digest("hex");
  const imageConfig = JSON.stringify({
    architecture: goArch(),
    os: "linux",
    config: { Cmd: ["/bin/sleep", "2147483647"] },
    rootfs: { type: "layers", diff_ids: [`sha256:${diffId}`] },
  });
  const configName = `${createHash("sha256").update(imageConfig).digest("hex")}.json`;
  mkdirSync(join(dir, "archive", diffId), { recursive: true });
  writeFileSync(join(dir, "archive", configName), imageConfig);
  Bun.spawnSync(["cp", layer, join(dir, "archive", diffId, "layer.tar")]);
  writeFileSync(join(dir, "archive", "manifest.json"), JSON.stringify([{ Config: configName, RepoTags: [image], Layers: [`${diffId}/layer.tar`] }]));
  const archive = join(dir, "image.tar");
  Bun.spawnSync(["tar", "-C", join(dir, "archive"), "-cf", archive, "."]);
  const imported = await c.ctr(["-n", "k8s.io", "images", "import", archive]);
  if (imported.status !== 0) return `ctr images import failed: ${imported.stderr.trim()}`;
  return (await c.ctr(["-n", "k8s.io", "images", "ls", "-q"])).stdout.split("\n").includes(image) ? undefined : `${image} not listed after import`;
}
