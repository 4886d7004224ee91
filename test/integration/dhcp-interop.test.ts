/**
 * dhcp plugin ↔ daemon interop with the Go 1.1.1 binaries (apt containernetworking-plugins,
 * /usr/lib/cni/dhcp) against dnsmasq: both speak Go net/rpc over HTTP, so either half can be Go.
 * Also GC of stale leases and STATUS. Root only; inside the test process's throwaway netns.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { runAllCleanups } from "../harness/cleanup.ts";
import { dhcpConf, labContainer, startDaemon, startLab, type Daemon, type Lab, type LabContainer } from "../harness/dhcp-lab.ts";
import { waitFor } from "../harness/wait.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { makeTempDir } from "../harness/tempdir.ts";

afterAll(() => runAllCleanups());

const RUN = existsSync("/usr/sbin/dnsmasq") && process.getuid?.() === 0;
const T = 120_000;

/** dnsmasq's log lines `DHCPACK(<if>) <ip> …` for one address. */
function acksFor(lab: Lab, ip: string): number {
  return lab.dnsmasqLog().split("\n").filter((l) => l.includes("DHCPACK(") && l.includes(` ${ip} `)).length;
}

function inv(command: string, id: string, c: LabContainer, conf: Record<string, unknown>): PluginInvocation {
  return { command, containerID: id, netns: c.netns.path, ifName: "eth0", config: conf, timeoutMs: 90_000 };
}

/**
 * ADD through `plugin`, the main plugin's part by hand (the address on eth0, so unicast renewals
 * are answered), a renewal at T1 = 3 s seen at dnsmasq, CHECK, DEL with DHCPRELEASE at dnsmasq.
 */
async function lifecycle(lab: Lab, run: typeof execPlugin, id: string, conf: Record<string, unknown>, releaseWithinMs: number): Promise<void> {
  const c = await labContainer();
  const add = await run("dhcp", inv("ADD", id, c, conf));
  expect(add.status, add.stdout + add.stderr).toBe(0);
  const cidr = add.json.ips[0].address as string;
  expect(cidr).toMatch(/^10\.77\.0\.1\d\d\/24$/);
  expect(add.json.ips[0].gateway).toBe("10.77.0.1");
  const ip = cidr.split("/")[0]!;
  expect(lab.leases().some((l) => l[2] === ip)).toBe(true);
  c.exec("ip", "addr", "add", cidr, "dev", "eth0");
  const acks = acksFor(lab, ip);
  await waitFor(`a renewal of ${ip} at dnsmasq`, () => acksFor(lab, ip) > acks, 20_000);
  const check = await run("dhcp", inv("CHECK", id, c, conf));
  expect(check.status, check.stdout + check.stderr).toBe(0);
  const del = await run("dhcp", inv("DEL", id, c, conf));
  expect(del.status, del.stdout + del.stderr).toBe(0);
  await waitFor(`the release of ${ip} at dnsmasq`, () => lab.leases().every((l) => l[2] !== ip), releaseWithinMs);
  await c.netns.destroy();
}

describe.skipIf(!RUN || !hasGoPlugin("dhcp"))("dhcp interop with the Go 1.1.1 binaries (dnsmasq, T1 = 3 s)", () => {
  let lab: Lab;
  beforeAll(async () => {
    lab = await startLab({ options: ["option:T1,3", "option:T2,100"] });
  }, T);
  afterAll(async () => {
    await lab?.stop();
  });

  test("Go plugin → our daemon: get, renew, check, release", async () => {
    const d = await startDaemon(join(lab.dir, "ours"), ["-timeout", "2s"]);
    await lifecycle(lab, execGoPlugin, "go2ts", dhcpConf(d.socketPath), 5000);
    expect(d.log()).toContain("go2ts/dhcpnet/eth0: renewed");
    expect(d.log()).toContain("go2ts/dhcpnet/eth0: released");
    await d.signal("SIGTERM");
  }, T);

  test("our plugin → Go daemon: get, renew, check (falls back to DHCP.Allocate), release; GC is a no-op there", async () => {
    const d = await startDaemon(join(lab.dir, "go"), ["-timeout", "2s"], {}, true);
    // Go's DHCP.Release returns at once and releases after the renewal in flight (every 3 s here) ends.
    await lifecycle(lab, execPlugin, "ts2go", dhcpConf(d.socketPath), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${d.log()}`);
    });
    expect(d.log()).toContain("ts2go/dhcpnet/eth0: lease acquired");
    expect(d.log()).toContain("ts2go/dhcpnet/eth0: releasing lease");
    const gc = await execPlugin("dhcp", {
      command: "GC",
      config: { ...dhcpConf(d.socketPath, {}, "dhcpnet", "1.1.0"), "cni.dev/valid-attachments": [] },
    });
    expect(gc.status, gc.stdout).toBe(0);
    expect(gc.stderr).toContain("does not implement DHCP.GC");
    const status = await execPlugin("dhcp", { command: "STATUS", config: dhcpConf(d.socketPath, {}, "dhcpnet", "1.1.0") });
    expect(status.status, status.stdout).toBe(0);
    await d.signal("SIGTERM");
  }, T);
});

describe.skipIf(!RUN)("dhcp GC and STATUS", () => {
  let lab: Lab;
  let d: Daemon;
  beforeAll(async () => {
    lab = await startLab();
    d = await startDaemon(join(lab.dir, "gc"), ["-timeout", "2s"]);
  }, T);
  afterAll(async () => {
    await d?.signal("SIGKILL");
    await lab?.stop();
  });

  test("GC releases the leases of attachments not in cni.dev/valid-attachments, on its own network only", async () => {
    const conf = dhcpConf(d.socketPath, {}, "dhcpnet", "1.1.0");
    const other = dhcpConf(d.socketPath, {}, "othernet", "1.1.0");
    const cs = await Promise.all([labContainer(), labContainer(), labContainer()]);
    const ips: string[] = [];
    for (const [i, c] of cs.entries()) {
      const add = await execPlugin("dhcp", inv("ADD", `gc${i}`, c, conf));
      expect(add.status, add.stdout + add.stderr).toBe(0);
      ips.push((add.json.ips[0].address as string).split("/")[0]!);
    }
    // gc1's eth0 also holds a lease for another network (another client id), which this GC must not touch.
    const elsewhere = await execPlugin("dhcp", inv("ADD", "gc1", cs[1]!, other));
    expect(elsewhere.status, elsewhere.stdout + elsewhere.stderr).toBe(0);
    const keep = [
      { containerID: "gc0", ifname: "eth0" },
      { containerID: "gc2", ifname: "eth0" },
      { containerID: "unknown", ifname: "eth0" },
    ];
    const first = await execPlugin("dhcp", { command: "GC", config: { ...conf, ...bothGcKeys([...keep, { containerID: "gc1", ifname: "eth0" }], []) } });
    expect(first.status, first.stdout + first.stderr).toBe(0);
    expect(d.log()).not.toContain("gc1/dhcpnet/eth0: not a valid attachment"); // the newer key wins
    const gc = await execPlugin("dhcp", { command: "GC", config: { ...conf, ...olderGcKey(keep) } });
    expect(gc.status, gc.stdout + gc.stderr).toBe(0);
    await waitFor("the release of gc1's lease at dnsmasq", () => lab.leases().every((l) => l[2] !== ips[1]), 5000);
    expect(d.log()).toContain("gc1/dhcpnet/eth0: not a valid attachment; releasing (GC)");
    const held = (id: string, c: LabContainer, cfg: Record<string, unknown>) => execPlugin("dhcp", inv("CHECK", id, c, cfg)).then((r) => r.status);
    expect(await held("gc0", cs[0]!, conf)).toBe(0);
    expect(await held("gc1", cs[1]!, conf)).toBe(1);
    expect(await held("gc2", cs[2]!, conf)).toBe(0);
    expect(await held("gc1", cs[1]!, other)).toBe(0);
    expect(lab.leases().some((l) => l[2] === ips[0])).toBe(true);
    // A GC without the list collects nothing and says why.
    const bare = await execPlugin("dhcp", { command: "GC", config: conf });
    expect(bare.status).toBe(1);
    expect(bare.json.msg).toContain("cni.dev/valid-attachments");
    expect(await held("gc0", cs[0]!, conf)).toBe(0);
    for (const [i, c] of cs.entries()) expect((await execPlugin("dhcp", inv("DEL", `gc${i}`, c, conf))).status).toBe(0);
    expect((await execPlugin("dhcp", inv("DEL", "gc1", cs[1]!, other))).status).toBe(0);
    await Promise.all(cs.map((c) => c.netns.destroy()));
  }, T);

  test("STATUS: 0 while the daemon answers, code 51 when it cannot be reached (ADD would fail, existing leases are not renewed)", async () => {
    const ok = await execPlugin("dhcp", { command: "STATUS", config: dhcpConf(d.socketPath, {}, "dhcpnet", "1.1.0") });
    expect(ok.status, ok.stdout).toBe(0);
    const gone = join(makeTempDir("cni-dhcp-status-"), "none.sock");
    const down = await execPlugin("dhcp", { command: "STATUS", config: dhcpConf(gone, {}, "dhcpnet", "1.1.0") });
    expect(down.status).toBe(1);
    expect(down.json.code).toBe(51);
    expect(down.json.msg).toContain(`DHCP daemon not reachable (existing leases are not renewed): dial-http unix ${gone}`);
  }, T);
});
