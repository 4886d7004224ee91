/** Results shared by the result/ tests; the golden files next to this one are their printed forms. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Result } from "../../types.ts";

/** Two interfaces, v4+v6 addresses with and without interface index/gateway, rich routes, full DNS. */
export function richResult(): Result {
  return {
    interfaces: [
      { name: "eth0", mac: "0a:58:0a:01:02:03", mtu: 1500, sandbox: "/var/run/netns/ctr" },
      {
        name: "net1",
        mac: "0a:58:0a:01:02:04",
        sandbox: "/var/run/netns/ctr",
        socketPath: "/run/vhost/net1.sock",
        pciID: "0000:00:1f.6",
      },
    ],
    ips: [
      { interface: 0, address: "10.1.2.3/24", gateway: "10.1.2.1" },
      { interface: 1, address: "2001:db8::3/64", gateway: "2001:db8::1" },
      { interface: 0, address: "10.9.9.9/16" },
      { address: "fd00::5/64" },
    ],
    routes: [
      { dst: "0.0.0.0/0", gw: "10.1.2.1", mtu: 1400, advmss: 1360, priority: 5, table: 100, scope: 0 },
      { dst: "192.168.0.0/16" },
      { dst: "::/0", gw: "2001:db8::1" },
      { dst: "2001:db8:1::/48", table: 0, scope: 253 },
    ],
    dns: {
      nameservers: ["10.1.2.1", "2001:db8::1"],
      domain: "example.com",
      search: ["example.com", "svc.local"],
      options: ["ndots:5"],
    },
  };
}

/** An L2-only result (no IPs): what bridge/macvlan without IPAM return. */
export function l2Result(): Result {
  return { interfaces: [{ name: "eth0", mac: "0a:58:0a:01:02:03", sandbox: "/var/run/netns/ctr" }] };
}

/** What upstream loopback builds. */
export function loopbackResult(): Result {
  return {
    interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: "/var/run/netns/ctr" }],
    ips: [
      { interface: 0, address: "127.0.0.1/8" },
      { interface: 0, address: "::1/128" },
    ],
  };
}

/** A golden file's exact text. */
export function golden(name: string): string {
  return readFileSync(join(import.meta.dir, name), "utf8");
}
