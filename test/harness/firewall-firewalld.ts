/**
 * A real firewalld for the firewall plugin's tests, isolated from the host: its own D-Bus system
 * bus (dbus-daemon with a private config and a socket in a temp dir) and firewalld started in a
 * private mount namespace (tmpfs over /run, so its /run/firewalld temp files stay private), with
 * `--system-config` in a temp copy of /etc/firewalld and its log in the temp dir. firewalld works
 * in the caller's network namespace — in the test runner that is the throwaway "host" netns — or
 * in one the test names, so the rules it installs never reach the real host. Either can be
 * restarted (the bus on the same socket path), as `systemctl restart` would.
 */
import { cpSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "./cleanup.ts";
import { makeTempDir } from "./tempdir.ts";

export interface PrivateFirewalld {
  /** DBUS_SYSTEM_BUS_ADDRESS of the private bus. */
  busAddress: string;
  dir: string;
  stop(): Promise<void>;
  /** `systemctl restart firewalld`: a new firewalld on the same bus. */
  restartFirewalld(): Promise<void>;
  /** dbus restarted: both go, a new bus on the same socket path, then a new firewalld. */
  restartBus(): Promise<void>;
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

/**
 * True once firewalld has finished starting (its `state` property reads RUNNING): it owns its bus
 * name before that, while it still flushes the iptables and ebtables tables it starts from.
 */
function firewalldRunning(busAddress: string): boolean {
  const p = Bun.spawnSync({
    cmd: [
      "dbus-send",
      "--system",
      "--print-reply",
      "--dest=org.fedoraproject.FirewallD1",
      "/org/fedoraproject/FirewallD1",
      "org.freedesktop.DBus.Properties.Get",
      "string:org.fedoraproject.FirewallD1",
      "string:state",
    ],
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress },
    stdout: "pipe",
    stderr: "ignore",
  });
  return p.exitCode === 0 && p.stdout.toString().includes('"RUNNING"');
}

function nameOwned(busAddress: string, name: string): boolean {
  const p = Bun.spawnSync({
    cmd: ["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetNameOwner", `string:${name}`],
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress },
    stdout: "ignore",
    stderr: "ignore",
  });
  return p.exitCode === 0;
}

/** A dbus-daemon listening on `<dir>/bus.sock` (the config written there first); resolves once it listens. */
async function startBusDaemon(dir: string): Promise<{ stop(): Promise<void> }> {
  const socket = join(dir, "bus.sock");
  rmSync(socket, { force: true });
  writeFileSync(join(dir, "bus.conf"), busConfig(socket));
  const bus = Bun.spawn(["dbus-daemon", "--nofork", "--nopidfile", `--config-file=${join(dir, "bus.conf")}`], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const forget = registerCleanup(`dbus-daemon ${bus.pid}`, () => bus.kill("SIGKILL"));
  const stop = async (): Promise<void> => {
    forget();
    bus.kill("SIGTERM");
    await bus.exited;
  };
  for (let i = 0; i < 100 && !existsSync(socket); i++) await Bun.sleep(50);
  if (!existsSync(socket)) {
    await stop();
    throw new Error(`private dbus-daemon did not come up: ${await new Response(bus.stderr).text()}`);
  }
  return { stop };
}

/** Starts a private bus only (no firewalld): for "firewalld is not running" tests. */
export async function startPrivateBus(): Promise<{ busAddress: string; dir: string; stop(): Promise<void> }> {
  const dir = makeTempDir("cni-fwd-");
  const daemon = await startBusDaemon(dir);
  return { busAddress: `unix:path=${join(dir, "bus.sock")}`, dir, stop: () => daemon.stop() };
}

/** firewalld (see module doc) on the bus of `dir`, in `netns` when given; resolves once it has started. */
async function startFirewalldDaemon(dir: string, busAddress: string, netns: string | undefined): Promise<{ stop(): Promise<void> }> {
  const cfg = join(dir, "etc-firewalld");
  if (!existsSync(cfg)) cpSync("/etc/firewalld", cfg, { recursive: true });
  const script = [
    "set -e",
    "mount -t tmpfs -o mode=0755 cni-test-run /run",
    `exec firewalld --nofork --nopid --system-config ${cfg} --log-target file --log-file ${join(dir, "firewalld.log")}`,
  ].join("\n");
  const inNetns = netns === undefined ? [] : ["nsenter", `--net=${netns}`, "--"];
  const fwd = Bun.spawn([...inNetns, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress },
  });
  const forget = registerCleanup(`firewalld ${fwd.pid}`, () => fwd.kill("SIGKILL"));
  const stop = async (): Promise<void> => {
    forget();
    fwd.kill("SIGTERM");
    await fwd.exited;
  };
  const deadline = Date.now() + 60_000;
  while (!nameOwned(busAddress, "org.fedoraproject.FirewallD1") || !firewalldRunning(busAddress)) {
    if (fwd.exitCode !== null || Date.now() > deadline) {
      const err = await new Response(fwd.stderr).text().catch(() => "");
      await stop();
      throw new Error(`firewalld did not come up (exit ${fwd.exitCode}): ${err.trim()}`);
    }
    await Bun.sleep(100);
  }
  return { stop };
}

/**
 * Starts dbus-daemon + firewalld (see module doc) and waits until firewalld has started.
 * `netns`: the network namespace firewalld works in (default: the caller's).
 */
export async function startPrivateFirewalld(opts: { netns?: string } = {}): Promise<PrivateFirewalld> {
  const dir = makeTempDir("cni-fwd-");
  const busAddress = `unix:path=${join(dir, "bus.sock")}`;
  let bus = await startBusDaemon(dir);
  let fwd: { stop(): Promise<void> };
  try {
    fwd = await startFirewalldDaemon(dir, busAddress, opts.netns);
  } catch (err) {
    await bus.stop();
    throw err;
  }
  return {
    busAddress,
    dir,
    stop: async () => {
      await fwd.stop();
      await bus.stop();
    },
    restartFirewalld: async () => {
      await fwd.stop();
      fwd = await startFirewalldDaemon(dir, busAddress, opts.netns);
    },
    restartBus: async () => {
      await fwd.stop();
      await bus.stop();
      bus = await startBusDaemon(dir);
      fwd = await startFirewalldDaemon(dir, busAddress, opts.netns);
    },
  };
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
