/**
 * Beyond upstream, against dnsmasq serving DHCPv4 and stateful DHCPv6 (no RAs): DHCPv6 leases
 * (`ipam.ipFamilies`), dual-stack, DNS servers and domains in the result, option 26 applied with
 * `ipam.applyMtu`. Root only; inside the test process's throwaway netns.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runAllCleanups } from "../harness/cleanup.ts";
import { dhcpConf, labContainer, startDaemon, startLab, SERVER_IP, type Daemon, type Lab, type LabContainer } from "../harness/dhcp-lab.ts";
import { waitFor } from "../harness/wait.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { duidFor, iaidFor } from "../../ipam/dhcp/daemon/client6.ts";

afterAll(() => runAllCleanups());

const RUN = existsSync("/usr/sbin/dnsmasq") && process.getuid?.() === 0;
const T = 120_000;
const V6 = /^fd00:77::1[0-9a-f]{2}$/;

function inv(command: string, id: string, c: LabContainer, conf: Record<string, unknown>): PluginInvocation {
  return { command, containerID: id, netns: c.netns.path, ifName: "eth0", config: conf, timeoutMs: 90_000 };
}

/** dnsmasq's lease-file rows for DHCPv6 (after its `duid` line): `<expiry> <iaid> <address> <host> <client duid>`. */
function leases6(lab: Lab): string[][] {
  const rows = lab.leases();
  const at = rows.findIndex((r) => r[0] === "duid");
  return at < 0 ? [] : rows.slice(at + 1);
}

const hexColon = (b: Uint8Array): string => Buffer.from(b).toString("hex").match(/../g)!.join(":");

/** Rewrites the persisted DHCPv6 lease of a daemon as bound `ageMs` ago. */
function ageV6Lease(d: Daemon, ageMs: number): void {
  for (const f of readdirSync(d.leaseDir).filter((n) => n.endsWith(".json"))) {
    const file = join(d.leaseDir, f);
    const r = JSON.parse(readFileSync(file, "utf8")) as { family?: number; boundAt: number };
    if (r.family !== 6) continue;
    r.boundAt = Date.now() - ageMs;
    writeFileSync(file, JSON.stringify(r));
  }
}

describe.skipIf(!RUN)("DHCPv6, dual-stack, DNS and MTU against dnsmasq", () => {
  let lab: Lab;
  let d: Daemon;
  beforeAll(async () => {
    lab = await startLab({
      range6: ["fd00:77::100", "fd00:77::1ff"],
      options: [
        "option:dns-server,10.77.0.53",
        "option:domain-name,lab.test",
        "option:domain-search,a.lab.test,b.lab.test",
        "option:mtu,1400",
        "option6:dns-server,[fd00:77::53]",
        "option6:domain-search,v6.lab.test",
      ],
    });
    d = await startDaemon(join(lab.dir, "d"), ["-timeout", "2s", "-resendtimeout", "10s"]);
  }, T);
  afterAll(async () => {
    await d?.signal("SIGKILL");
    await lab?.stop();
  });

  test("IPv6 only: SOLICIT/ADVERTISE/REQUEST/REPLY, DNS from options 23/24, DUID-UUID of the attachment; DEL sends RELEASE", async () => {
    const c = await labContainer();
    const conf = dhcpConf(d.socketPath, { ipFamilies: ["ipv6"] });
    const add = await execPlugin("dhcp", inv("ADD", "v6a", c, conf));
    expect(add.status, add.stdout + add.stderr).toBe(0);
    expect(add.json.ips).toHaveLength(1);
    const [addr, prefix] = (add.json.ips[0].address as string).split("/");
    expect(addr).toMatch(V6);
    expect(prefix).toBe("128"); // DHCPv6 leases addresses, not prefixes (ipv6PrefixLength unset)
    expect(add.json.ips[0].gateway).toBeUndefined();
    expect(add.json.routes).toBeUndefined();
    expect(add.json.dns).toEqual({ nameservers: ["fd00:77::53"], search: ["v6.lab.test"] });
    const row = leases6(lab).find((r) => r[2] === addr);
    expect(row?.[1]).toBe(String(iaidFor("eth0")));
    expect(row?.[4]).toBe(hexColon(duidFor("v6a/dhcpnet/eth0")));
    expect(lab.dnsmasqLog()).toContain("DHCPSOLICIT(dhsrv0)");
    expect(lab.dnsmasqLog()).toContain("DHCPREQUEST(dhsrv0)");
    // The same attachment asking again (e.g. after DEL was lost) is the same client: same address.
    const check = await execPlugin("dhcp", inv("CHECK", "v6a", c, conf));
    expect(check.status, check.stdout).toBe(0);
    const del = await execPlugin("dhcp", inv("DEL", "v6a", c, conf));
    expect(del.status, del.stdout).toBe(0);
    await waitFor("the DHCPv6 RELEASE at dnsmasq", () => leases6(lab).every((r) => r[2] !== addr), 5000);
    expect(lab.dnsmasqLog()).toContain("DHCPRELEASE(dhsrv0)");
    expect(d.log()).toContain(`v6a/dhcpnet/eth0 (DHCPv6): released ${addr}`);
    await c.netns.destroy();
  }, T);

  test("dual-stack with applyMtu: both addresses, v4 routes, merged DNS, option 26 on eth0 and in the 1.1.0 result; DEL releases both", async () => {
    const c = await labContainer();
    const conf = dhcpConf(d.socketPath, { ipFamilies: ["ipv4", "ipv6"], ipv6PrefixLength: 64, applyMtu: true }, "dhcpnet", "1.1.0");
    const add = await execPlugin("dhcp", inv("ADD", "ds1", c, conf));
    expect(add.status, add.stdout + add.stderr).toBe(0);
    const r = add.json;
    expect(r.interfaces).toEqual([{ name: "eth0", mtu: 1400, sandbox: c.netns.path }]);
    expect(r.ips).toHaveLength(2);
    expect(r.ips[0]).toMatchObject({ gateway: SERVER_IP, interface: 0 });
    expect(r.ips[0].address).toMatch(/^10\.77\.0\.1\d\d\/24$/);
    expect(r.ips[1].address).toMatch(/^fd00:77::1[0-9a-f]{2}\/64$/);
    expect(r.routes).toEqual([{ dst: "0.0.0.0/0", gw: SERVER_IP }]);
    expect(r.dns).toEqual({ nameservers: ["10.77.0.53", "fd00:77::53"], domain: "lab.test", search: ["a.lab.test", "b.lab.test", "v6.lab.test"] });
    expect(c.exec("ip", "-o", "link", "show", "eth0")).toContain("mtu 1400");
    // Without applyMtu the option is not even requested and the MTU is left alone.
    const c2 = await labContainer();
    const plain = await execPlugin("dhcp", inv("ADD", "ds2", c2, dhcpConf(d.socketPath, {}, "dhcpnet", "1.1.0")));
    expect(plain.status, plain.stdout).toBe(0);
    expect(plain.json.interfaces).toBeUndefined();
    expect(c2.exec("ip", "-o", "link", "show", "eth0")).toContain("mtu 1500");
    expect((await execPlugin("dhcp", inv("CHECK", "ds1", c, conf))).status).toBe(0);
    const v4 = (r.ips[0].address as string).split("/")[0]!;
    const v6 = (r.ips[1].address as string).split("/")[0]!;
    expect((await execPlugin("dhcp", inv("DEL", "ds1", c, conf))).status).toBe(0);
    await waitFor("both releases at dnsmasq", () => lab.leases().every((l) => l[2] !== v4 && l[2] !== v6), 5000);
    expect((await execPlugin("dhcp", inv("DEL", "ds2", c2, dhcpConf(d.socketPath)))).status).toBe(0);
    await Promise.all([c.netns.destroy(), c2.netns.destroy()]);
  }, T);

  test("a persisted DHCPv6 lease past T1 is RENEWed at daemon start, an expired one REBOUND (dnsmasq answers both)", async () => {
    const dir = join(lab.dir, "restart6");
    const d1 = await startDaemon(dir, ["-timeout", "2s"]);
    const c = await labContainer();
    const conf = dhcpConf(d1.socketPath, { ipFamilies: ["ipv6"] });
    const add = await execPlugin("dhcp", inv("ADD", "r6", c, conf));
    expect(add.status, add.stdout + add.stderr).toBe(0);
    const addr = (add.json.ips[0].address as string).split("/")[0]!;
    expect(await d1.signal("SIGTERM")).toBe(0);
    // dnsmasq grants 2 min, T1 1 min, T2 1.75 min: 70 s ago is in RENEWING.
    ageV6Lease(d1, 70_000);
    const d2 = await startDaemon(dir, ["-timeout", "2s"]);
    await waitFor("the renewal", () => d2.log().includes(`r6/dhcpnet/eth0 (DHCPv6): renewed ${addr}`), 20_000);
    expect(lab.dnsmasqLog()).toContain("DHCPRENEW(dhsrv0)");
    expect(await d2.signal("SIGTERM")).toBe(0);
    ageV6Lease(d2, 3_600_000);
    const d3 = await startDaemon(dir, ["-timeout", "2s"]);
    await waitFor("the rebind", () => d3.log().includes(`r6/dhcpnet/eth0 (DHCPv6): re-acquired ${addr}`), 20_000);
    expect(lab.dnsmasqLog()).toContain("DHCPREBIND(dhsrv0)");
    expect((await execPlugin("dhcp", inv("DEL", "r6", c, dhcpConf(d3.socketPath, { ipFamilies: ["ipv6"] })))).status).toBe(0);
    await waitFor("release", () => leases6(lab).every((r) => r[2] !== addr), 5000);
    await d3.signal("SIGTERM");
    await c.netns.destroy();
  }, T);

  test("dual-stack where DHCPv6 cannot work (IPv6 disabled): ADD fails and the IPv4 lease it got is released", async () => {
    const c = await labContainer();
    c.exec("sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1");
    const conf = dhcpConf(d.socketPath, { ipFamilies: ["ipv4", "ipv6"] });
    const before = lab.leases().length;
    const add = await execPlugin("dhcp", inv("ADD", "nov6", c, conf));
    expect(add.status).toBe(1);
    expect(add.json.msg).toContain("cannot send DHCPv6 on eth0: it has no IPv6 link-local address");
    await waitFor("the IPv4 release", () => lab.leases().length === before, 5000);
    expect(d.log()).toMatch(/nov6\/dhcpnet\/eth0: released 10\.77\.0\.1\d\d/);
    expect((await execPlugin("dhcp", inv("CHECK", "nov6", c, conf))).json.msg).toContain("no DHCP lease held");
    await c.netns.destroy();
  }, T);

  test.skipIf(!hasGoPlugin("dhcp"))("our plugin asking a Go daemon for IPv6: ADD fails clearly and the IPv4 lease is released", async () => {
    const g = await startDaemon(join(lab.dir, "go"), ["-timeout", "2s"], {}, true);
    const c = await labContainer();
    const add = await execPlugin("dhcp", inv("ADD", "g6", c, dhcpConf(g.socketPath, { ipFamilies: ["ipv4", "ipv6"] })));
    expect(add.status).toBe(1);
    expect(add.json.msg).toContain("the DHCP daemon leased IPv4 where ipam.ipFamilies asks for IPv4 + IPv6");
    await waitFor("the Go daemon's release", () => g.log().includes("g6/dhcpnet/eth0: releasing lease"), 20_000);
    await g.signal("SIGTERM");
    await c.netns.destroy();
  }, T);
});
