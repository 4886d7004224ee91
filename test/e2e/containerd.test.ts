/**
 * containerd 1.6 (Debian) with its CRI plugin calling our plugins, driven by rc-crictl (a tiny CRI
 * client built by setup/build-rc-crictl.sh; crictl is not packaged in Debian 12). A private
 * containerd (own socket, root, state, CNI conf dir; cni.bin_dir = the build under test) is started
 * and stopped by PID. RunPodSandbox → CNI ADD (loopback + the conflist), StopPodSandbox → DEL,
 * RemovePodSandbox → DEL again without netns; nothing left afterwards. Images come from the podman
 * store prepared by podman-setup.sh (oci-archive export). Setup notes from the team's
 * containerd-cni-demo.sh: `restrict_oom_score_adj = true` (no CAP_SYS_RESOURCE here), runc,
 * cgroupfs.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { staticBusybox, staticBusyboxTag } from "../harness/busybox.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { OUR_BIN, hasOurs, missingReason, rowTest } from "./lib/plugins.ts";
import { E2E_CACHE, RC_CRICTL, commandMissing, run, show, toolMissing } from "./lib/tools.ts";

const STATE = join(E2E_CACHE, "containerd");
const RUNDIR = "/run/cni-ts-e2e-containerd";
const SOCK = join(RUNDIR, "containerd.sock");
const NET = "e2ectr";
const SUBNET = "10.84.1.0/24";
/** The pause image, tagged with the hash of the busybox it holds: one from another busybox is never reused. */
let pause = "";
const PODMAN_STATE = join(E2E_CACHE, "podman");
const podmanEnv = {
  CONTAINERS_CONF: join(PODMAN_STATE, "containers.conf"),
  CONTAINERS_STORAGE_CONF: join(PODMAN_STATE, "storage.conf"),
  CONTAINERS_REGISTRIES_CONF: join(PODMAN_STATE, "registries.conf"),
};

const skipReason = !sandboxed()
  ? "needs root in the e2e sandbox"
  : commandMissing("containerd") ?? commandMissing("podman") ?? toolMissing(RC_CRICTL, "run test/e2e/setup/prepare.sh") ?? missingReason(["bridge", "host-local", "loopback"]);

let daemon: ReturnType<typeof Bun.spawn> | undefined;
let setupError: string | undefined;
const crictl = (args: string[]) => run([RC_CRICTL, ...args], { env: { CONTAINER_RUNTIME_ENDPOINT: `unix://${SOCK}` } });
const ctr = (args: string[]) => run(["ctr", "--address", SOCK, ...args]);

function conflist(): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    name: NET,
    plugins: [
      { type: "bridge", bridge: "e2ectr0", isGateway: true, ipMasq: true, hairpinMode: true, ipam: { type: "host-local", ranges: [[{ subnet: SUBNET }]], routes: [{ dst: "0.0.0.0/0" }] } },
      ...(hasOurs("portmap") ? [{ type: "portmap", capabilities: { portMappings: true } }] : []),
      ...(hasOurs("firewall") ? [{ type: "firewall" }] : []),
      ...(hasOurs("tuning") ? [{ type: "tuning" }] : []),
    ],
  };
}

async function ensureImages(): Promise<string | undefined> {
  const have = (await ctr(["-n", "k8s.io", "images", "ls", "-q"])).stdout.split("\n");
  if (have.includes(pause)) return undefined;
  const pm = (a: string[]) => run(["podman", ...a], { env: podmanEnv });
  if ((await pm(["image", "exists", pause])).status !== 0) {
    const root = join(STATE, "pause-rootfs");
    rmSync(root, { recursive: true, force: true });
    mkdirSync(join(root, "bin"), { recursive: true });
    Bun.spawnSync(["cp", staticBusybox(), join(root, "bin", "busybox")]);
    Bun.spawnSync(["ln", "-s", "busybox", join(root, "bin", "sleep")]);
    Bun.spawnSync(["tar", "-C", root, "-cf", `${root}.tar`, "."]);
    const imp = await pm(["import", "-q", "--change", 'CMD ["/bin/sleep","2147483647"]', `${root}.tar`, pause]);
    if (imp.status !== 0) return `podman import of the pause image failed: ${show(imp)}`;
  }
  const archive = join(STATE, "pause.oci.tar");
  rmSync(archive, { force: true });
  const saved = await pm(["save", "-q", "--format", "oci-archive", "-o", archive, pause]);
  if (saved.status !== 0) return `podman save failed: ${show(saved)}`;
  const imported = await ctr(["-n", "k8s.io", "images", "import", archive]);
  return imported.status === 0 ? undefined : `ctr images import failed: ${show(imported)}`;
}

if (skipReason !== undefined) process.stderr.write(`SKIP containerd: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)("containerd 1.6 CRI with our plugins", () => {
  beforeAll(async () => {
    try {
      pause = `localhost/e2e-pause:bb-${staticBusyboxTag()}`;
    } catch (err) {
      setupError = (err as Error).message;
      return;
    }
    mkdirSync(join(STATE, "net.d"), { recursive: true });
    mkdirSync(RUNDIR, { recursive: true });
    Bun.spawnSync(["mount", "-t", "tmpfs", "e2e-containerd-run", RUNDIR]);
    writeFileSync(join(STATE, "net.d", `10-${NET}.conflist`), JSON.stringify(conflist(), null, 2));
    writeFileSync(
      join(STATE, "config.toml"),
      `version = 2
root = "${STATE}/root"
state = "${RUNDIR}/state"
[grpc]
  address = "${SOCK}"
[ttrpc]
  address = "${SOCK}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${STATE}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pause}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${OUR_BIN}"
    conf_dir = "${STATE}/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`,
    );
    daemon = Bun.spawn(["containerd", "--config", join(STATE, "config.toml")], { cwd: "/tmp", stdout: "ignore", stderr: Bun.file(join(STATE, "containerd.log")) });
    for (let i = 0; i < 100; i++) {
      if ((await ctr(["version"])).status === 0) break;
      await Bun.sleep(100);
    }
    if ((await ctr(["version"])).status !== 0) {
      setupError = `containerd did not start; see ${STATE}/containerd.log`;
      return;
    }
    setupError = await ensureImages();
  }, 240_000);

  afterAll(async () => {
    if (daemon) {
      daemon.kill("SIGTERM");
      await daemon.exited;
    }
    Bun.spawnSync(["ip", "link", "del", "e2ectr0"], { stderr: "ignore" });
    Bun.spawnSync(["umount", "-l", RUNDIR]);
  });

  rowTest("containerd CRI: RunPodSandbox / StopPodSandbox / RemovePodSandbox through our plugins", undefined, async () => {
    expect(setupError).toBeUndefined();
    const runp = await crictl(["runp", "-name", "e2e-pod1", "-logdir", join(STATE, "logs")]);
    expect(show(runp)).toStartWith("exit=0");
    const pod = runp.stdout.trim().split("\n").pop() ?? "";
    const info = JSON.parse((await crictl(["inspectp", pod])).stdout) as { state: string; ip: string };
    expect(info.state).toBe("SANDBOX_READY");
    expect(info.ip).toStartWith("10.84.1.");
    expect(show(await run(["ping", "-c1", "-W3", info.ip]))).toStartWith("exit=0");
    expect(readdirSync("/var/lib/cni/results").some((f) => f.includes(pod))).toBe(true);

    expect(show(await crictl(["stopp", pod]))).toStartWith("exit=0");
    expect(readdirSync("/var/lib/cni/results").filter((f) => f.includes(pod))).toEqual([]);
    const dir = `/var/lib/cni/networks/${NET}`;
    const left = existsSync(dir) ? readdirSync(dir).filter((f) => f !== "lock" && !f.startsWith("last_reserved_ip") && !f.startsWith(".")) : [];
    expect(left).toEqual([]);
    expect((await run(["iptables-save"])).stdout.split("\n").filter((l) => l.includes(pod))).toEqual([]);
    expect((await run(["ip", "-o", "link", "show", "master", "e2ectr0"])).stdout.trim()).toBe("");
    expect(show(await crictl(["rmp", pod]))).toStartWith("exit=0");
  }, 180_000);
});
