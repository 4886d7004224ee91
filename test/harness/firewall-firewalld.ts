/**
 * A real firewalld for the firewall plugin's tests, isolated from the host: its own D-Bus system
 * bus (dbus-daemon with a private config and a socket in a temp dir) and firewalld started in a
 * private mount namespace (tmpfs over /run, so its /run/firewalld temp files stay private), with
 * `--system-config` in a temp copy of /etc/firewalld and its log in the temp dir. Both inherit the
 * caller's network namespace — in the test runner that is the throwaway "host" netns — so the
 * rules firewalld installs never reach the real host.
 */
import { cpSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "./cleanup.ts";
import { makeTempDir } from "./tempdir.ts";

export interface PrivateFirewalld {
  /** DBUS_SYSTEM_BUS_ADDRESS of the private bus. */
  busAddress: string;
  dir: string;
  stop(): Promise<void>;
}

export function firewalldInstalled(): boolean {
  return existsSync("/usr/sbin/firewalld") && existsSync("/usr/bin/dbus-daemon") && existsSync("/usr/bin/dbus-send");
}

const busConfig = (socket: string): string => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`;

function nameOwned(busAddress: string, name: string): boolean {
  const p = Bun.spawnSync({
    cmd: ["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetNameOwner", `string:${name}`],
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress },
    stdout: "ignore",
    stderr: "ignore",
  });
  return p.exitCode === 0;
}

/** Starts a private bus only (no firewalld): for "firewalld is not running" tests. */
export async function startPrivateBus(): Promise<{ busAddress: string; dir: string; stop(): Promise<void> }> {
  const dir = makeTempDir("cni-fwd-");
  const socket = join(dir, "bus.sock");
  writeFileSync(join(dir, "bus.conf"), busConfig(socket));
  const bus = Bun.spawn(["dbus-daemon", "--nofork", "--nopidfile", `--config-file=${join(dir, "bus.conf")}`], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const stop = async (): Promise<void> => {
    bus.kill("SIGTERM");
    await bus.exited;
  };
  const forget = registerCleanup(`dbus-daemon ${bus.pid}`, () => bus.kill("SIGKILL"));
  for (let i = 0; i < 100 && !existsSync(socket); i++) await Bun.sleep(50);
  if (!existsSync(socket)) {
    await stop();
    forget();
    throw new Error(`private dbus-daemon did not come up: ${await new Response(bus.stderr).text()}`);
  }
  return {
    busAddress: `unix:path=${socket}`,
    dir,
    stop: async () => {
      forget();
      await stop();
    },
  };
}

/** Starts dbus-daemon + firewalld (see module doc) and waits until firewalld owns its bus name. */
export async function startPrivateFirewalld(): Promise<PrivateFirewalld> {
  const bus = await startPrivateBus();
  const cfg = join(bus.dir, "etc-firewalld");
  cpSync("/etc/firewalld", cfg, { recursive: true });
  const script = [
    "set -e",
    "mount -t tmpfs -o mode=0755 cni-test-run /run",
    `exec firewalld --nofork --nopid --system-config ${cfg} --log-target file --log-file ${join(bus.dir, "firewalld.log")}`,
  ].join("\n");
  const fwd = Bun.spawn(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: bus.busAddress },
  });
  const forget = registerCleanup(`firewalld ${fwd.pid}`, () => fwd.kill("SIGKILL"));
  const stop = async (): Promise<void> => {
    forget();
    fwd.kill("SIGTERM");
    await fwd.exited;
    await bus.stop();
  };
  const deadline = Date.now() + 60_000;
  while (!nameOwned(bus.busAddress, "org.fedoraproject.FirewallD1")) {
    if (fwd.exitCode !== null || Date.now() > deadline) {
      const err = await new Response(fwd.stderr).text().catch(() => "");
      await stop();
      throw new Error(`firewalld did not come up (exit ${fwd.exitCode}): ${err.trim()}`);
    }
    await Bun.sleep(200);
  }
  return { busAddress: bus.busAddress, dir: bus.dir, stop };
}

/** `firewall-cmd`-free query: the zone's sources, through dbus-send on the private bus. */
export function zoneSources(busAddress: string, zone: string): string[] {
  const p = Bun.spawnSync({
    cmd: ["dbus-send", "--system", "--print-reply", "--dest=org.fedoraproject.FirewallD1", "/org/fedoraproject/FirewallD1", "org.fedoraproject.FirewallD1.zone.getSources", `string:${zone}`],
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (p.exitCode !== 0) throw new Error(`getSources failed: ${p.stderr.toString()}`);
  return [...p.stdout.toString().matchAll(/string "([^"]*)"/g)].map((m) => m[1]!);
}
