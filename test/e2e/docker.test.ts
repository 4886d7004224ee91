/**
 * Docker: its own networking does not use CNI, but CNI's documented way to network a Docker
 * container works with our plugins. A private dockerd (docker.io from Debian) is started in the
 * lane's throwaway netns with its own data-root, exec-root, pidfile, socket and containerd
 * namespace, and `--bridge=none --iptables=false --ip6tables=false --ip-forward=false`, so it
 * cannot touch the host's networking. A container started with `--network=none` gets our conflist
 * (bridge + host-local → portmap → firewall) attached to its netns, /proc/<pid>/ns/net, through
 * cnitool; its httpd is reached through the published port from the host; then DEL, and nothing is
 * left. dockerd is stopped by PID and its directory removed. The two host paths dockerd uses
 * whatever its flags say — /etc/docker (its trust key, and a daemon.json it would read) and
 * /run/docker (plugin discovery) — get a tmpfs each in the lane's private mount namespace; a mount
 * point this test had to create is removed again.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { staticBusybox } from "../harness/busybox.ts";
import { fetchFromHost, leftovers, portNet } from "./lib/attach.ts";
import { OUR_BIN, missingReason, rowTest } from "./lib/plugins.ts";
import { CNITOOL, commandMissing, run, show, toolMissing } from "./lib/tools.ts";

/** Debian's docker.io client: another `docker` may come first in PATH. */
const DOCKER = "/usr/bin/docker";
const IMAGE = "cni-e2e-busybox:latest";
const CONTAINER = "cni-e2e-web";
const HOST_PORT = 38491;
/** Directories dockerd writes or reads whatever its flags say: shadowed by a tmpfs during the test. */
const SHADOWED = ["/etc/docker", "/run/docker"];

const skipReason = !sandboxed()
  ? "needs root in the e2e sandbox"
  : commandMissing("dockerd") ??
    (existsSync(DOCKER) ? undefined : `${DOCKER} not found (test/setup-host.sh installs docker.io)`) ??
    toolMissing(CNITOOL, "run test/e2e/setup/prepare.sh") ??
    missingReason(["bridge", "host-local", "portmap", "firewall"]);

let root = "";
const createdMountPoints: string[] = [];
let dockerd: ReturnType<typeof Bun.spawn> | undefined;
let setupError: string | undefined;
const docker = (args: string[]) => run([DOCKER, "-H", `unix://${join(root, "docker.sock")}`, ...args], { timeoutMs: 120_000 });

function dockerdLog(): string {
  try {
    return readFileSync(join(root, "dockerd.log"), "utf8").trim().split("\n").slice(-15).join("\n");
  } catch {
    return "(no dockerd.log)";
  }
}

/** A busybox image (busybox-static's binary: the image has no libc) with /www/index.html, imported offline. */
async function importImage(): Promise<string | undefined> {
  const rootfs = join(root, "rootfs");
  mkdirSync(join(rootfs, "bin"), { recursive: true });
  mkdirSync(join(rootfs, "www"), { recursive: true });
  try {
    Bun.spawnSync(["cp", staticBusybox(), join(rootfs, "bin", "busybox")]);
  } catch (err) {
    return (err as Error).message;
  }
  for (const applet of ["sh", "httpd", "ip", "ping", "sleep"]) Bun.spawnSync(["ln", "-s", "busybox", join(rootfs, "bin", applet)]);
  writeFileSync(join(rootfs, "www", "index.html"), "hello from a docker container\n");
  Bun.spawnSync(["tar", "-C", rootfs, "-cf", `${rootfs}.tar`, "."]);
  const imported = await docker(["import", "-c", "ENV PATH=/bin", `${rootfs}.tar`, IMAGE]);
  return imported.status === 0 ? undefined : `docker import failed: ${show(imported)}`;
}

if (skipReason !== undefined) process.stderr.write(`SKIP docker: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)("Docker container (--network=none) networked by our plugins through cnitool", () => {
  useFixtureCleanup();

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "cni-e2e-docker-"));
    for (const dir of SHADOWED) {
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        createdMountPoints.push(dir);
      }
      const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "mode=0700", "cni-e2e-docker", dir], { stderr: "pipe" });
      if (mounted.exitCode !== 0) {
        setupError = `cannot shadow ${dir} with a tmpfs: ${mounted.stderr.toString()}`;
        return;
      }
    }
    dockerd = Bun.spawn(
      [
        "dockerd",
        `--data-root=${join(root, "data")}`,
        `--exec-root=${join(root, "exec")}`,
        `--pidfile=${join(root, "docker.pid")}`,
        `--host=unix://${join(root, "docker.sock")}`,
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--exec-opt=native.cgroupdriver=cgroupfs",
        "--containerd-namespace=cni-ts-e2e",
        "--containerd-plugins-namespace=cni-ts-e2e-plugins",
      ],
      { stdin: "ignore", stdout: Bun.file(join(root, "dockerd.log")), stderr: Bun.file(join(root, "dockerd.log")) },
    );
    for (let i = 0; i < 60; i++) {
      if (dockerd.exitCode !== null) break;
      if ((await docker(["version"])).status === 0) break;
      await Bun.sleep(500);
    }
    const ready = await docker(["version", "--format", "{{.Server.Version}}"]);
    if (ready.status !== 0) {
      setupError = `dockerd did not come up (exit ${dockerd.exitCode}): ${dockerdLog()}`;
      return;
    }
    setupError = await importImage();
  }, 120_000);

  afterAll(async () => {
    if (dockerd !== undefined) {
      await docker(["rm", "-f", CONTAINER]);
      dockerd.kill("SIGTERM");
      const stopped = await Promise.race([dockerd.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
      if (!stopped) {
        dockerd.kill("SIGKILL");
        await dockerd.exited;
      }
    }
    for (const dir of SHADOWED) Bun.spawnSync(["umount", "-l", dir], { stderr: "ignore" });
    for (const dir of createdMountPoints) Bun.spawnSync(["rmdir", dir]);
    if (root === "") return;
    // overlay2 and shm mounts docker made under its root (the lane's mount namespace is private)
    const mounts = readFileSync("/proc/self/mounts", "utf8").split("\n").map((l) => l.split(" ")[1] ?? "").filter((m) => m.startsWith(root));
    for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  rowTest("docker run --network=none + cnitool ADD on /proc/<pid>/ns/net: IP inside, port reached from the host, DEL leaves nothing", skipReason, async () => {
    expect(setupError).toBeUndefined();
    const started = await docker(["run", "-d", "--network=none", "--name", CONTAINER, IMAGE, "httpd", "-f", "-p", "80", "-h", "/www"]);
    expect(show(started)).toStartWith("exit=0");
    const pid = (await docker(["inspect", "-f", "{{.State.Pid}}", CONTAINER])).stdout.trim();
    expect(pid).toMatch(/^[1-9]\d*$/);
    const netns = `/proc/${pid}/ns/net`;
    expect((await docker(["exec", CONTAINER, "ip", "-o", "link", "show"])).stdout.trim().split("\n").map((l) => l.split(": ")[1])).toEqual(["lo"]);

    const net = portNet({ name: "e2e-docker", bridge: "e2edock0", subnet: "10.85.2.0/24", hostPort: HOST_PORT, binDir: OUR_BIN }, netns);
    const add = await net.cnitool("add", netns);
    expect(show(add)).toStartWith("exit=0");
    const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split("/")[0]!;
    expect((await docker(["exec", CONTAINER, "ip", "-o", "-4", "addr", "show", "eth0"])).stdout).toContain(`${ip}/24`);
    expect(show(await docker(["exec", CONTAINER, "ping", "-c1", "-W3", net.gateway]))).toStartWith("exit=0");
    expect(await fetchFromHost(HOST_PORT)).toBe("hello from a docker container\n");
    expect(show(await net.cnitool("check", netns))).toStartWith("exit=0");

    expect(show(await net.cnitool("del", netns))).toStartWith("exit=0");
    expect((await docker(["exec", CONTAINER, "ip", "link", "show", "eth0"])).status).not.toBe(0);
    expect(await leftovers({ name: "e2e-docker", dataDir: net.dataDir }, [`${ip}/`, `${ip}:`, "e2e-docker"])).toEqual([]);
    expect(show(await docker(["rm", "-f", CONTAINER]))).toStartWith("exit=0");
  }, 180_000);
});
