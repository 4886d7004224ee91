/**
 * The Debian package's maintainer scripts (deploy/debian/) on a node where systemd runs as PID 1:
 * a container booted from this host's own root under a tmpfs overlay (lib/systemd-container.ts),
 * so nothing is written to the real host. The package as `make deb` builds it (deploy/deb.sh),
 * version 0.0.1, and the same package as versions 0.0.2 and 0.0.3 (only the control file's
 * version changed), then as an operator would:
 * 1. `apt-get install` of the first: cni-plugins.socket is enabled and listens, no agent runs
 *    until the first call; a loopback ADD through the shim in /usr/lib/cni starts the agent and is
 *    served by it (its metrics: counted, no refusal, no report of a standalone run).
 * 2. the upgrade to the second restarts the running agent: another main pid, running the new
 *    /usr/lib/cni/cni-plugins (a graceful restart would execute the replaced file again), which
 *    serves the next call; the old agent drained (its summary line in the journal).
 * 3. `systemctl disable --now cni-plugins.socket`, then the upgrade to the third: still disabled,
 *    nothing started; a call runs standalone.
 * 4. with the socket enabled again, the agent running, cni-reload.service enabled by the operator and
 *    an empty /var/lib/cni/dhcp (what older versions' StateDirectory= made): `dpkg --purge` stops the
 *    agent and leaves no file of the package, no unit, no enablement link, no deb-systemd-helper
 *    state, no /run/cni, no /var/lib/cni/dhcp.
 * The upgrades run the scripts exactly as an upgrade between releases does (postinst configure
 * with the old version); the purge runs dpkg itself, as `apt-get purge` does, without apt's removal
 * of the packages that need a CNI plugin package (podman).
 */
import { describe, expect } from "bun:test";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { GO_BIN_DIR, MULTI_CALL_BINARY, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { debFiles } from "./lib/debian.ts";
import { rowTest } from "./lib/plugins.ts";
import { SystemdContainer } from "./lib/systemd-container.ts";
import { commandMissing, run, show } from "./lib/tools.ts";

const PKG = "cni-plugins-ts";
/** The package's versions: the first built by deploy/deb.sh (from the tag v0.0.1), the others the same package with only its version changed. */
const VERSIONS = ["0.0.1", "0.0.2", "0.0.3"];
/** $1 a .deb, $2 an unused directory, $3 a version, $4 the .deb to write: $1 with version $3. */
const REPACK = `set -e
dpkg-deb -R "$1" "$2"
sed -i "s/^Version: .*/Version: $3/" "$2/DEBIAN/control"
dpkg-deb --root-owner-group -Znone --build "$2" "$4" >/dev/null
rm -rf "$2"`;
const DEBS_IN_CONTAINER = "/mnt/cni-ts-debs";
/** Units the package ships that an install leaves as they were (not enabled). */
const OPT_IN_UNITS = ["cni-plugins.service", "cni-plugins-dhcp.socket", "cni-dhcp.socket", "cni-dhcp.service", "cni-reload.service"];
const NETNS = "cni-ts-lo";
const LOOPBACK_CONF = '{"cniVersion":"1.1.0","name":"lo","type":"loopback"}';
const METRICS_URL = "http://127.0.0.1:9584/metrics";

const hostUnits = existsSync("/etc/systemd/system") ? readdirSync("/etc/systemd/system").filter((n) => n.startsWith("cni-")) : [];
const skipReason = !sandboxed()
  ? "needs root in the e2e sandbox"
  : commandMissing("systemd-nspawn") ??
    commandMissing("apt-get") ??
    (existsSync("/lib/systemd/systemd") ? undefined : "systemd is not installed (test/setup-host.sh installs it)") ??
    (existsSync(MULTI_CALL_BINARY) ? undefined : `${MULTI_CALL_BINARY} is missing (make build)`) ??
    (hostUnits.length > 0 ? `this host's /etc/systemd/system has units of ours (${hostUnits.join(", ")}; \`make install\`?), which the container would inherit` : undefined);
if (skipReason !== undefined) process.stderr.write(`SKIP deb-systemd: ${skipReason}\n`);

/** The value of each sample of a Prometheus text exposition, by `name{labels}`. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^(\S+) (\S+)$/.exec(line);
    if (m !== null && !line.startsWith("#")) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

describe.skipIf(skipReason !== undefined)("Debian package under systemd: install, upgrade, purge (systemd-nspawn)", () => {
  useFixtureCleanup();

  rowTest("the socket is enabled and serves on install; an upgrade restarts the agent and keeps an operator's disable; purge leaves nothing", undefined, async () => {
    const hostBridge = statSync(join(GO_BIN_DIR, "bridge"), { throwIfNoEntry: false });
    const debDir = makeTempDir("cni-e2e-deb-systemd-debs-");
    const arch = (await run(["dpkg", "--print-architecture"])).stdout.trim();
    const plugins = (await run([process.execPath, join(REPO_ROOT, "build", "list-plugins.ts")])).stdout.trim().split("\n");
    const debs = VERSIONS.map((v) => `${PKG}_${v}_${arch}.deb`);
    const built = await run(["bash", join(REPO_ROOT, "deploy", "deb.sh"), MULTI_CALL_BINARY, `v${VERSIONS[0]}`, arch, debDir, ...plugins], { timeoutMs: 180_000 });
    expect(show(built)).toStartWith("exit=0");
    for (const [i, version] of VERSIONS.entries()) {
      if (i === 0) continue;
      const tree = join(debDir, `tree-${version}`);
      const repacked = await run(["sh", "-c", REPACK, "sh", join(debDir, debs[0]!), tree, version, join(debDir, debs[i]!)]);
      expect(show(repacked)).toStartWith("exit=0");
    }

    const node = await SystemdContainer.boot(makeTempDir("cni-e2e-deb-systemd-node-"), [{ host: debDir, container: DEBS_IN_CONTAINER }]);
    const sh = (script: string) => node.exec(["sh", "-c", script]);
    const word = async (argv: string[]) => (await node.exec(argv)).stdout.trim();
    const apt = (args: string[]) => node.exec(["apt-get", ...args], { env: { DEBIAN_FRONTEND: "noninteractive" }, timeoutMs: 180_000 });
    const version = () => word(["dpkg-query", "-W", "-f=${Status} ${Version}", PKG]);
    const mainPid = async () => Number(await word(["systemctl", "show", "-p", "MainPID", "--value", "cni-plugins.service"]));
    const loopback = (command: string, id: string) =>
      node.exec(["/usr/lib/cni/loopback"], {
        env: { CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_NETNS: `/run/netns/${NETNS}`, CNI_IFNAME: "lo", CNI_PATH: "/usr/lib/cni" },
        stdin: LOOPBACK_CONF,
      });
    /** The agent served the call just made: it counted it, refused nothing, and got no report of a standalone run. */
    const expectServed = async (command: string) => {
      await Bun.sleep(300); // a standalone run's report reaches the agent within 100 ms
      const m = samples(await node.check(["curl", "-s", "--max-time", "5", METRICS_URL]));
      expect(m.get(`cni_plugin_calls_total{plugin="loopback",command="${command}",code="0"}`)).toBe(1);
      expect([...m].filter(([k, v]) => k.startsWith("cni_agent_refusals_total{") && v !== 0)).toEqual([]);
      expect(m.get('cni_agent_standalone_reports_total{outcome="accepted"}') ?? 0).toBe(0);
    };
    /** The journal's summary line of the agent with pid `pid` (it logs it when it has drained at a stop). */
    const summaryOf = async (pid: number) => {
      for (let i = 0; i < 40; i++) {
        const line = (await word(["journalctl", "--no-pager", "-o", "cat", `_PID=${pid}`])).split("\n").find((l) => / served \d+ call\(s\), refused \d+$/.test(l));
        if (line !== undefined) return line.replace(/^.* served/, "served");
        await Bun.sleep(50);
      }
      return "no summary";
    };

    try {
      // The host is a container image whose policy-rc.d forbids starting services (exit 101), as
      // image builds want; a node has none.
      expect(show(await sh("rm -f /usr/sbin/policy-rc.d && test -d /run/systemd/system && ip netns add " + NETNS))).toStartWith("exit=0");

      // 1. install: the socket enabled and listening, no agent until the first call, which it serves
      expect(show(await apt(["install", "-y", "--no-install-recommends", `${DEBS_IN_CONTAINER}/${debs[0]}`]))).toStartWith("exit=0");
      expect(await version()).toBe("install ok installed 0.0.1");
      expect(await word(["systemctl", "is-enabled", "cni-plugins.socket"])).toBe("enabled");
      expect(await word(["readlink", "/etc/systemd/system/sockets.target.wants/cni-plugins.socket"])).toBe("/lib/systemd/system/cni-plugins.socket");
      expect(await word(["systemctl", "is-active", "cni-plugins.socket"])).toBe("active");
      expect(show(await sh("test -S /run/cni/plugins.sock"))).toStartWith("exit=0");
      expect(await word(["systemctl", "is-active", "cni-plugins.service"])).toBe("inactive");
      for (const unit of OPT_IN_UNITS) expect(`${unit}: ${await word(["systemctl", "is-enabled", unit])}`).toBe(`${unit}: disabled`);
      expect(show(await sh("test -f /var/lib/systemd/deb-systemd-helper-enabled/cni-plugins.socket.dsh-also"))).toStartWith("exit=0");
      const added = await loopback("ADD", "c1");
      expect(show(added)).toStartWith("exit=0");
      expect(JSON.parse(added.stdout).ips).toContainEqual({ address: "127.0.0.1/8", interface: 0 });
      expect(await word(["systemctl", "is-active", "cni-plugins.service"])).toBe("active");
      const first = await mainPid();
      expect(first).toBeGreaterThan(0);
      await expectServed("ADD");

      // 2. upgrade: the running agent restarted with the new executable; it serves the next call
      expect(show(await apt(["install", "-y", "--no-install-recommends", `${DEBS_IN_CONTAINER}/${debs[1]}`]))).toStartWith("exit=0");
      expect(await version()).toBe("install ok installed 0.0.2");
      const second = await mainPid();
      expect(second).toBeGreaterThan(0);
      expect(second).not.toBe(first);
      expect(await word(["readlink", `/proc/${second}/exe`])).toBe("/usr/lib/cni/cni-plugins");
      expect(await word(["stat", "-L", "-c", "%i", `/proc/${second}/exe`])).toBe(await word(["stat", "-c", "%i", "/usr/lib/cni/cni-plugins"]));
      expect(await summaryOf(first)).toBe("served 1 call(s), refused 0");
      expect(await word(["systemctl", "is-enabled", "cni-plugins.socket"])).toBe("enabled");
      expect(await word(["systemctl", "is-active", "cni-plugins.socket"])).toBe("active");
      expect(show(await loopback("DEL", "c1"))).toStartWith("exit=0");
      expect(await mainPid()).toBe(second);
      await expectServed("DEL");

      // 3. the operator's disable outlives an upgrade: nothing enabled or started; calls run standalone
      expect(show(await node.exec(["systemctl", "disable", "--now", "cni-plugins.socket"]))).toStartWith("exit=0");
      expect(await word(["systemctl", "is-active", "cni-plugins.service"])).toBe("inactive");
      expect(show(await apt(["install", "-y", "--no-install-recommends", `${DEBS_IN_CONTAINER}/${debs[2]}`]))).toStartWith("exit=0");
      expect(await version()).toBe("install ok installed 0.0.3");
      expect(await word(["systemctl", "is-enabled", "cni-plugins.socket"])).toBe("disabled");
      expect(await word(["systemctl", "is-active", "cni-plugins.socket"])).toBe("inactive");
      expect(await word(["systemctl", "is-active", "cni-plugins.service"])).toBe("inactive");
      expect(show(await sh("test ! -e /run/cni/plugins.sock"))).toStartWith("exit=0");
      expect(show(await loopback("ADD", "c2"))).toStartWith("exit=0");
      expect(await word(["systemctl", "is-active", "cni-plugins.service"])).toBe("inactive");

      // 4. purge, with everything running that it must take along
      expect(show(await node.exec(["systemctl", "enable", "--now", "cni-plugins.socket", "cni-reload.service"]))).toStartWith("exit=0");
      expect(show(await sh("rm -rf /var/lib/cni/dhcp && mkdir -p -m 0700 /var/lib/cni/dhcp"))).toStartWith("exit=0");
      expect(show(await loopback("DEL", "c2"))).toStartWith("exit=0");
      const third = await mainPid();
      expect(third).toBeGreaterThan(0);
      expect(show(await node.exec(["dpkg", "--purge", "--force-depends", PKG]))).toStartWith("exit=0");
      expect(await word(["sh", "-c", `dpkg-query -W -f='\${Status}' ${PKG} 2>/dev/null; true`])).toMatch(/^(|.* not-installed)$/);
      expect(await summaryOf(third)).toBe("served 1 call(s), refused 0");
      const paths = [...(await debFiles(join(debDir, debs[2]!))), `/usr/share/doc/${PKG}`];
      expect(await word(["sh", "-c", 'for p in "$@"; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done; true', "sh", ...paths])).toBe("");
      expect(await word(["sh", "-c", `ls /var/lib/dpkg/info | grep -F '${PKG}.'; true`])).toBe("");
      expect(await word(["systemctl", "list-unit-files", "--no-legend", "cni-*"])).toBe("");
      expect(await word(["systemctl", "list-units", "--all", "--no-legend", "cni-*"])).toBe("");
      expect(await word(["sh", "-c", "for p in /proc/[0-9]*; do readlink $p/exe; done | grep /usr/lib/cni; true"])).toBe("");
      expect(await word(["find", "/etc/systemd", "/var/lib/systemd", "-name", "cni-*"])).toBe("");
      expect(await word(["sh", "-c", 'for p in /run/cni /var/lib/cni/dhcp; do [ -e "$p" ] && echo "$p:" $(ls -A "$p"); done; true'])).toBe("");
    } catch (err) {
      process.stderr.write(`deb-systemd: the container's console:\n${node.log.slice(-4000)}\n`);
      throw err;
    } finally {
      await node.stop();
    }

    // the real host was never written
    expect((await run(["dpkg-query", "-W", "-f=${Status}", PKG])).stdout).not.toContain("installed");
    expect(existsSync("/etc/systemd/system/sockets.target.wants/cni-plugins.socket")).toBe(false);
    const nowBridge = statSync(join(GO_BIN_DIR, "bridge"), { throwIfNoEntry: false });
    expect([nowBridge?.ino, nowBridge?.mtimeMs]).toEqual([hostBridge?.ino, hostBridge?.mtimeMs]);
  }, 300_000);
});
