/**
 * The Debian package (`make deb`, deploy/deb.sh) replacing Debian's containernetworking-plugins the
 * way an operator does it, `apt-get install ./cni-plugins-ts_<version>_<arch>.deb`, then podman
 * (Debian's, CNI backend, plugin directory /usr/lib/cni) running containers through it, then
 * `apt-get install ./containernetworking-plugins_<version>.deb` putting Debian's package back: ours
 * is removed with nothing left behind and Debian's files verify; purging ours then takes its
 * enablement link (made without systemd running, as in an image build) and leaves Debian's units alone.
 *
 * Everything happens in a private mount namespace (a `sleep` holder entered with nsenter) where
 * /usr, /etc, /var/lib, /var/log, /var/cache/apt and /var/cache/debconf are overlays with their
 * upper layers on a tmpfs: apt and dpkg really run, but the real host (whose /usr/lib/cni holds the
 * Go 1.1.1 binaries that the interop and differential suites, and other test runs, use) is never
 * written, and the test checks that it was not. All overlays are verified before apt runs.
 * Debian's .deb comes from apt's archive cache (a copy is kept in the e2e cache).
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pluginNames } from "../../registry/registry.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { GO_BIN_DIR, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { readCallLog } from "./lib/attach.ts";
import { debFiles } from "./lib/debian.ts";
import { rowTest } from "./lib/plugins.ts";
import { E2E_CACHE, commandMissing, run, show, type Ran } from "./lib/tools.ts";

const DEBIAN_PKG = "containernetworking-plugins";
const OUR_PKG = "cni-plugins-ts";
const OVERLAID = ["/usr", "/etc", "/var/lib", "/var/log", "/var/cache/apt", "/var/cache/debconf"];
const DEB_CACHE = join(E2E_CACHE, "debs");
const PODMAN_STATE = join(E2E_CACHE, "podman-deb");

/** Adds `"callLog": log` to every plugin of the conflist of network `name` in `confDir` (docs/call-log.md). */
function logCallsOf(confDir: string, name: string, log: string): void {
  for (const f of readdirSync(confDir).filter((n) => n.endsWith(".conflist"))) {
    const path = join(confDir, f);
    const list = JSON.parse(readFileSync(path, "utf8")) as { name?: string; plugins?: Record<string, unknown>[] };
    if (list.name !== name) continue;
    for (const p of list.plugins ?? []) p.callLog = log;
    writeFileSync(path, JSON.stringify(list, null, 2));
    return;
  }
  throw new Error(`no conflist of network ${name} in ${confDir}`);
}
const NET = "e2edeb";
const SUBNET = "10.85.3.0/24";
const HOST_PORT = 38492;
const NAMES = pluginNames();

function installedVersion(pkg: string): string | undefined {
  const q = Bun.spawnSync(["dpkg-query", "-W", "-f=${Status} ${Version}", pkg], { stderr: "ignore" });
  const [want, , state, version] = q.stdout.toString().split(" ");
  return q.exitCode === 0 && want === "install" && state === "installed" ? version : undefined;
}

/** Debian's .deb of the installed version: the e2e cache's copy, else apt's archive cache (copied). */
function debianDeb(): string | undefined {
  const version = installedVersion(DEBIAN_PKG);
  if (version === undefined) return undefined;
  const arch = Bun.spawnSync(["dpkg", "--print-architecture"]).stdout.toString().trim();
  const file = `${DEBIAN_PKG}_${version.replace(/^\d+:/, "")}_${arch}.deb`;
  const kept = join(DEB_CACHE, file);
  if (existsSync(kept)) return kept;
  const archived = join("/var/cache/apt/archives", file);
  if (!existsSync(archived)) return undefined;
  mkdirSync(DEB_CACHE, { recursive: true });
  copyFileSync(archived, kept);
  return kept;
}

const debianFile = sandboxed() ? debianDeb() : undefined;
const skipReason = !sandboxed()
  ? "needs root in the e2e sandbox"
  : commandMissing("apt-get") ??
    commandMissing("podman") ??
    (installedVersion(DEBIAN_PKG) === undefined ? `${DEBIAN_PKG} is not installed (test/setup-host.sh installs it)` : undefined) ??
    (debianFile === undefined ? `no copy of ${DEBIAN_PKG}'s .deb in ${DEB_CACHE} or /var/cache/apt/archives (apt-get install --reinstall --download-only ${DEBIAN_PKG})` : undefined);

let holder: ReturnType<typeof Bun.spawn> | undefined;
let ourDeb = "";
let setupError: string | undefined;
const hostBridge = statSync(join(GO_BIN_DIR, "bridge"), { throwIfNoEntry: false });

function readlinkOr(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/** Runs `argv` inside the holder's mount namespace (the lane's network namespace is kept). */
const inNs = (argv: string[], env: Record<string, string> = {}, timeoutMs = 180_000): Promise<Ran> =>
  run(["nsenter", `--target=${holder!.pid}`, "--mount", "--", ...argv], { env: { DEBIAN_FRONTEND: "noninteractive", ...env }, timeoutMs });
const status = async (pkg: string) => (await inNs(["dpkg-query", "-W", "-f=${Status}", pkg])).stdout;

if (skipReason !== undefined) process.stderr.write(`SKIP deb: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)("Debian package (make deb) over Debian's containernetworking-plugins", () => {
  useFixtureCleanup();

  beforeAll(async () => {
    const made = await run(["make", "-C", REPO_ROOT, "--no-print-directory", "deb"], { timeoutMs: 280_000 });
    const name = /^deb: (\S+\.deb) /m.exec(made.stdout)?.[1];
    if (made.status !== 0 || name === undefined) {
      setupError = `make deb failed: ${show(made)}`;
      return;
    }
    ourDeb = join(REPO_ROOT, name);
    holder = Bun.spawn(["unshare", "--mount", "--propagation", "private", "--", "sleep", "infinity"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    const ownNs = readlinkSync("/proc/self/ns/mnt");
    for (let i = 0; i < 100 && readlinkOr(`/proc/${holder.pid}/ns/mnt`) === ownNs; i++) await Bun.sleep(50);
    const upper = "/run/cni-ts-e2e-deb";
    const script = [
      "set -e",
      `mkdir -p ${upper} && mount -t tmpfs cni-e2e-deb ${upper}`,
      ...OVERLAID.map((d, i) => `mkdir -p ${upper}/${i}/up ${upper}/${i}/work && mount -t overlay cni-e2e-deb-${i} -o lowerdir=${d},upperdir=${upper}/${i}/up,workdir=${upper}/${i}/work ${d}`),
      "mount -t tmpfs cni-e2e-deb-cni /var/lib/cni",
      "mkdir -p /run/cni-ts-e2e-deb-podman && mount -t tmpfs cni-e2e-deb-podman /run/cni-ts-e2e-deb-podman",
    ].join("\n");
    const mounted = await inNs(["sh", "-c", script]);
    const mountinfo = readFileSync(`/proc/${holder.pid}/mountinfo`, "utf8").split("\n").map((l) => l.split(" "));
    const overlays = mountinfo.filter((f) => f[f.indexOf("-") + 1] === "overlay").map((f) => f[4]);
    const missing = OVERLAID.filter((d) => !overlays.includes(d));
    if (mounted.status !== 0 || missing.length > 0 || readlinkOr(`/proc/${holder.pid}/ns/mnt`) === ownNs) {
      setupError = `overlay setup failed (not overlaid: ${missing.join(", ") || "none"}): ${show(mounted)}`;
    }
  }, 300_000);

  afterAll(async () => {
    if (holder !== undefined) {
      await inNs(["podman", "rm", "-f", "-t", "0", "e2e-deb-c1", "e2e-deb-web"], podmanEnv());
      holder.kill("SIGKILL");
      await holder.exited;
    }
    Bun.spawnSync(["rmdir", "/run/cni-ts-e2e-deb", "/run/cni-ts-e2e-deb-podman"], { stderr: "ignore" });
  }, 120_000);

  function podmanEnv(): Record<string, string> {
    return {
      CONTAINERS_CONF: join(PODMAN_STATE, "containers.conf"),
      CONTAINERS_STORAGE_CONF: join(PODMAN_STATE, "storage.conf"),
      CONTAINERS_REGISTRIES_CONF: join(PODMAN_STATE, "registries.conf"),
    };
  }

  rowTest("apt-get install ./cni-plugins-ts.deb replaces Debian's package; podman runs containers through /usr/lib/cni; putting Debian's back leaves nothing of ours", undefined, async () => {
    expect(setupError).toBeUndefined();
    expect(await status(DEBIAN_PKG)).toBe("install ok installed");

    // 1. ours over Debian's
    const installed = await inNs(["apt-get", "install", "-y", "--no-install-recommends", ourDeb]);
    expect(show(installed)).toStartWith("exit=0");
    expect(await status(OUR_PKG)).toBe("install ok installed");
    expect(await status(DEBIAN_PKG)).not.toBe("install ok installed");
    expect(show(await inNs(["apt-get", "check"]))).toStartWith("exit=0"); // podman's container-network-stack is still provided
    const ls = (await inNs(["ls", "/usr/lib/cni"])).stdout.trim().split("\n");
    expect(ls.sort()).toEqual(["cni-plugins", "cni-plugins-shim", ...NAMES].sort());
    const linked = ["cni-plugins-shim", ...NAMES];
    const inodes = new Set((await inNs(["stat", "-c", "%i", ...linked.map((f) => `/usr/lib/cni/${f}`)])).stdout.trim().split("\n"));
    expect(inodes.size).toBe(1);
    expect((await inNs(["cat", "/lib/systemd/system/cni-dhcp.service"])).stdout).toContain("ExecStart=/usr/lib/cni/dhcp daemon");
    expect((await inNs(["cat", "/lib/systemd/system/cni-plugins.service"])).stdout).toContain("ExecStart=/usr/lib/cni/cni-plugins serve");
    expect((await inNs(["cat", "/lib/systemd/system/cni-reload.service"])).stdout).toContain("ExecStart=/usr/lib/cni/cni-plugins reload --watch");
    // No systemd runs here, as in a chroot or an image build: the agent's socket is enabled, not started.
    expect((await inNs(["readlink", "/etc/systemd/system/sockets.target.wants/cni-plugins.socket"])).stdout.trim()).toBe("/lib/systemd/system/cni-plugins.socket");

    // 2. podman (CNI backend) with /usr/lib/cni, the per-call log on to see that our plugins ran
    const callLog = join(makeTempDir("cni-e2e-deb-log-"), "calls.jsonl");
    const env = podmanEnv();
    const setup = await inNs(["bash", join(import.meta.dir, "setup", "podman-setup.sh"), "/usr/lib/cni", PODMAN_STATE], { PODMAN_RUNROOT: "/run/cni-ts-e2e-deb-podman" });
    expect(show(setup)).toStartWith("exit=0");
    const podman = (args: string[]) => inNs(["podman", ...args], env);
    await podman(["network", "rm", "-f", NET]);
    expect(show(await podman(["network", "create", "--subnet", SUBNET, NET]))).toStartWith("exit=0");
    // The log is named in the network's conflist (the `callLog` key), not in podman's environment:
    // podman may tear a container's network down from its cleanup process (conmon's exit command),
    // whose environment is not the one given here.
    logCallsOf(join(PODMAN_STATE, "net.d"), NET, callLog);
    const image = "localhost/e2e-busybox:latest";
    expect(show(await podman(["run", "-d", "--name", "e2e-deb-c1", "--network", NET, image, "sleep", "600"]))).toStartWith("exit=0");
    expect(show(await podman(["run", "-d", "--name", "e2e-deb-web", "--network", NET, "-p", `${HOST_PORT}:80`, image, "httpd", "-f", "-p", "80", "-h", "/www"]))).toStartWith("exit=0");
    const webIp = (await podman(["inspect", "e2e-deb-web", "--format", `{{(index .NetworkSettings.Networks "${NET}").IPAddress}}`])).stdout.trim();
    expect(webIp).toStartWith("10.85.3.");
    expect(show(await podman(["exec", "e2e-deb-c1", "ping", "-c1", "-W3", webIp]))).toStartWith("exit=0");
    let body = "";
    for (let i = 0; i < 20 && body === ""; i++) {
      await Bun.sleep(200);
      body = (await run(["curl", "-s", "--max-time", "2", `http://127.0.0.1:${HOST_PORT}/`])).stdout;
    }
    expect(body.trim()).toBe("hello from e2e-busybox");
    expect(show(await podman(["rm", "-f", "-t", "0", "e2e-deb-c1", "e2e-deb-web"]))).toStartWith("exit=0");
    expect(show(await podman(["network", "rm", "-f", NET]))).toStartWith("exit=0");
    const calls = readCallLog(callLog);
    const ran = new Set(calls.map((c) => `${c.plugin} ${c.command}`));
    for (const p of ["bridge", "host-local", "portmap", "firewall", "tuning"]) {
      expect(ran).toContain(`${p} ADD`);
      expect(ran).toContain(`${p} DEL`);
    }
    expect(calls.filter((c) => c.outcome !== "ok")).toEqual([]);
    expect((await run(["iptables-save"])).stdout.split("\n").filter((l) => l.includes("10.85.3."))).toEqual([]);

    // 3. Debian's package back: ours removed, nothing of it left, Debian's files intact
    const restored = await inNs(["apt-get", "install", "-y", "--no-install-recommends", debianFile!]);
    expect(show(restored)).toStartWith("exit=0");
    expect(await status(DEBIAN_PKG)).toBe("install ok installed");
    expect(await status(OUR_PKG)).not.toBe("install ok installed");
    const debianPaths = new Set(await debFiles(debianFile!));
    const ours = (await debFiles(ourDeb)).filter((p) => !debianPaths.has(p));
    expect(ours).toContain("/usr/lib/cni/cni-plugins");
    const left = await inNs(["sh", "-c", 'for p in "$@"; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done; [ -e /usr/share/doc/cni-plugins-ts ] && echo /usr/share/doc/cni-plugins-ts; true', "sh", ...ours]);
    expect(left.stdout.trim()).toBe("");
    const verify = await inNs(["dpkg", "--verify", DEBIAN_PKG]);
    expect(show(verify)).toBe("exit=0 stdout= stderr=");
    expect(show(await inNs(["apt-get", "check"]))).toStartWith("exit=0");
    const version = await inNs(["/usr/lib/cni/bridge"], { CNI_COMMAND: "VERSION" });
    expect(JSON.parse(version.stdout).supportedVersions).not.toContain("1.1.0"); // the Go 1.1.1 binary again
    // Purging ours then takes its enablement link and deb-systemd-helper's state of its units, but
    // not of cni-dhcp.*, which are Debian's package's units again.
    expect(show(await inNs(["dpkg", "--purge", OUR_PKG]))).toStartWith("exit=0");
    const dshState = "/var/lib/systemd/deb-systemd-helper-enabled";
    const present = (paths: string[]) => inNs(["sh", "-c", 'for p in "$@"; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done; true', "sh", ...paths]);
    expect((await present(["/etc/systemd/system/sockets.target.wants/cni-plugins.socket", `${dshState}/cni-plugins.socket.dsh-also`])).stdout.trim()).toBe("");
    expect((await present([`${dshState}/cni-dhcp.socket.dsh-also`, `${dshState}/cni-dhcp.service.dsh-also`])).stdout.trim().split("\n")).toHaveLength(2);
    expect(show(await inNs(["dpkg", "--verify", DEBIAN_PKG]))).toBe("exit=0 stdout= stderr=");

    // the real host was never written
    expect(installedVersion(DEBIAN_PKG)).toBeDefined();
    expect(installedVersion(OUR_PKG)).toBeUndefined();
    const nowBridge = statSync(join(GO_BIN_DIR, "bridge"));
    expect([nowBridge.ino, nowBridge.mtimeMs]).toEqual([hostBridge!.ino, hostBridge!.mtimeMs]);
    expect(readdirSync(GO_BIN_DIR)).not.toContain("cni-plugins");
  }, 300_000);
});
