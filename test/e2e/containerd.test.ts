/**
 * containerd 1.6 (Debian) with its CRI plugin calling our plugins, driven by rc-crictl (a tiny CRI
 * client built by setup/build-rc-crictl.sh; crictl is not packaged in Debian 12). A private
 * containerd (own socket, root, state, CNI conf dir; cni.bin_dir = the build under test) is started
 * and stopped by PID. RunPodSandbox → CNI ADD (loopback + the conflist), StopPodSandbox → DEL,
 * RemovePodSandbox → DEL again without netns; nothing left afterwards. The daemon and its sandbox
 * image: test/harness/containerd.ts.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { staticBusybox, staticBusyboxTag } from "../harness/busybox.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { OUR_BIN, hasOurs, missingReason, rowTest } from "./lib/plugins.ts";
import { startContainerd, ensureSandboxImage, type Containerd } from "../harness/containerd.ts";
import { E2E_CACHE, RC_CRICTL, commandMissing, run, show, toolMissing } from "./lib/tools.ts";

const STATE = join(E2E_CACHE, "containerd");
const RUNDIR = "/run/cni-ts-e2e-containerd";
const NET = "e2ectr";
const SUBNET = "10.84.1.0/24";
/** The pause image, tagged with the hash of the busybox it holds: one from another busybox is never reused. */
let pause = "";

const skipReason = !sandboxed()
  ? "needs root in the e2e sandbox"
  : commandMissing("containerd") ?? toolMissing(RC_CRICTL, "run test/e2e/setup/prepare.sh") ?? missingReason(["bridge", "host-local", "loopback"]);

let daemon: Containerd | undefined;
let setupError: string | undefined;
const crictl = (args: string[]) => daemon!.crictl(RC_CRICTL, args);

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
    writeFileSync(join(STATE, "net.d", `10-${NET}.conflist`), JSON.stringify(conflist(), null, 2));
    try {
      daemon = await startContainerd({ state: STATE, rundir: RUNDIR, binDir: OUR_BIN, confDir: join(STATE, "net.d"), sandboxImage: pause });
      setupError = await ensureSandboxImage(daemon, pause, staticBusybox(), STATE);
    } catch (err) {
      setupError = (err as Error).message;
    }
  }, 240_000);

  afterAll(async () => {
    await daemon?.stop();
    Bun.spawnSync(["ip", "link", "del", "e2ectr0"], { stderr: "ignore" });
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
