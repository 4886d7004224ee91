/**
 * The differential table: configurations covering every plugin and option the Go 1.1.1 binaries
 * (Debian containernetworking-plugins, /usr/lib/cni) support, plus bad inputs. Each row is run by
 * Go and by ours on identical fresh "host" + container namespaces (diff.test.ts).
 *
 * A row names the plugins it needs; rows whose plugin is not in our build yet, or whose kernel
 * feature is missing here, are printed as skips with the reason. The rows that need a feature only
 * the VM lane's stock kernel has ({@link VM_KERNEL_FEATURES}: ipvlan, 8021q vlan, vrf, dummy, bridge
 * vlan filtering) also run there, in test/integration/diff-kernel.vm.test.ts ({@link vmRows}).
 */
import type { NetworkConfigList } from "../harness/conflist.ts";
import type { KernelFeature } from "../harness/kernel.ts";
import { startDhcpOnNode } from "./lib/dhcp-node.ts";
import type { Node } from "./lib/node.ts";

export interface DiffContext {
  /** host-local dataDir of this side (distinct per side; it never shows in results). */
  dataDir: string;
  /** Values a row's `prepare` returned for this side (e.g. a daemon's socket path). */
  prepared?: Record<string, string>;
}

/** The side a row is prepared for: the plugin directory of Go or of ours. */
export interface DiffSide {
  binDir: string;
}

export interface DiffCase {
  name: string;
  /** Plugin types the row runs (ours must have them all). */
  plugins: string[];
  kernel?: KernelFeature[];
  /** A permanent reason this row cannot run here (printed as the skip reason). */
  unsupported?: string;
  list: (ctx: DiffContext) => NetworkConfigList;
  /**
   * Host-side preparation on the node before ADD (e.g. a macvlan master, a DHCP server). What it
   * returns reaches `list` as `ctx.prepared`; processes it starts must register their cleanup.
   */
  prepare?: (node: Node, side: DiffSide) => void | Record<string, string> | Promise<void | Record<string, string>>;
  capabilityArgs?: Record<string, unknown>;
  args?: string;
  ifName?: string;
  /** Bad input: only ADD is run and both must fail; code + exit status are compared. */
  badInput?: boolean;
}

/** Kernel features the build host lacks and the VM lane's Debian kernel has (test/vm/README.md). */
export const VM_KERNEL_FEATURES: readonly KernelFeature[] = ["bridge_vlan_filtering", "ipvlan", "vlan", "dummy", "vrf"];

/** The rows the VM lane runs: those needing a feature of {@link VM_KERNEL_FEATURES}. */
export function vmRows(): DiffCase[] {
  return DIFF_CASES.filter((r) => (r.kernel ?? []).some((k) => VM_KERNEL_FEATURES.includes(k)));
}

const V = "1.0.0";

function hl(dataDir: string, subnets: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "host-local",
    dataDir,
    ranges: subnets.map((s) => [{ subnet: s }]),
    routes: [{ dst: "0.0.0.0/0" }],
    ...extra,
  };
}

function single(name: string, plugin: Record<string, unknown>, cniVersion = V): NetworkConfigList {
  return { name, cniVersion, plugins: [plugin] };
}

function veth(node: Node, a: string, b: string): void {
  node.sh(["ip", "link", "add", a, "type", "veth", "peer", "name", b]);
  node.sh(["ip", "link", "set", a, "up"]);
  node.sh(["ip", "link", "set", b, "up"]);
}

const bridge = (ctx: DiffContext, extra: Record<string, unknown> = {}, subnets = ["10.80.1.0/24"]) => ({
  type: "bridge",
  bridge: "dfbr0",
  isGateway: true,
  ipam: hl(ctx.dataDir, subnets),
  ...extra,
});

const ptp = (ctx: DiffContext, extra: Record<string, unknown> = {}, subnets = ["10.80.2.0/24"]) => ({
  type: "ptp",
  ipam: hl(ctx.dataDir, subnets),
  ...extra,
});

export const DIFF_CASES: DiffCase[] = [
  // ---------------------------------------------------------------- loopback
  { name: "loopback 1.0.0", plugins: ["loopback"], list: () => single("df-lo", { type: "loopback" }), ifName: "lo" },
  { name: "loopback 0.3.1", plugins: ["loopback"], list: () => single("df-lo", { type: "loopback" }, "0.3.1"), ifName: "lo" },
  // ---------------------------------------------------------------- bridge (+ host-local / static)
  { name: "bridge gateway ipMasq v4", plugins: ["bridge", "host-local"], list: (c) => single("df-br", bridge(c, { ipMasq: true })) },
  {
    name: "bridge dual-stack isDefaultGateway 0.4.0",
    plugins: ["bridge", "host-local"],
    list: (c) =>
      single("df-br6", { ...bridge(c, { isDefaultGateway: true }, ["10.80.3.0/24", "fd80:3::/64"]), ipam: { ...hl(c.dataDir, ["10.80.3.0/24", "fd80:3::/64"]), routes: [] } }, "0.4.0"),
  },
  { name: "bridge hairpin mtu forceAddress", plugins: ["bridge", "host-local"], list: (c) => single("df-brh", bridge(c, { hairpinMode: true, mtu: 1400, forceAddress: true })) },
  { name: "bridge promiscMode", plugins: ["bridge", "host-local"], list: (c) => single("df-brp", bridge(c, { promiscMode: true })) },
  { name: "bridge not gateway 0.3.1", plugins: ["bridge", "host-local"], list: (c) => single("df-brn", bridge(c, { isGateway: false }), "0.3.1") },
  { name: "bridge L2 only (empty ipam)", plugins: ["bridge"], list: () => single("df-brl2", { type: "bridge", bridge: "dfbr0", ipam: {} }) },
  { name: "bridge macspoofchk + static ipam", plugins: ["bridge", "static"], list: () => single("df-brs", { type: "bridge", bridge: "dfbr0", isGateway: true, macspoofchk: true, ipam: { type: "static", addresses: [{ address: "10.80.4.5/24", gateway: "10.80.4.1" }], routes: [{ dst: "0.0.0.0/0" }] } }) },
  { name: "bridge MAC from CNI_ARGS", plugins: ["bridge", "host-local"], args: "IgnoreUnknown=1;MAC=02:00:00:80:00:05", list: (c) => single("df-brmac", bridge(c)) },
  { name: "bridge vlan 10", plugins: ["bridge", "host-local"], kernel: ["bridge_vlan_filtering"], list: (c) => single("df-brv", bridge(c, { vlan: 10 })) },
  // ---------------------------------------------------------------- ptp
  { name: "ptp ipMasq v4", plugins: ["ptp", "host-local"], list: (c) => single("df-ptp", ptp(c, { ipMasq: true })) },
  { name: "ptp dual-stack mtu 1400", plugins: ["ptp", "host-local"], list: (c) => single("df-ptp6", { ...ptp(c, { mtu: 1400 }, ["10.80.5.0/24", "fd80:5::/64"]), ipam: { ...hl(c.dataDir, ["10.80.5.0/24", "fd80:5::/64"]), routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }] } }) },
  { name: "host-local ranges rangeStart/End + CNI_ARGS IP", plugins: ["ptp", "host-local"], args: "IgnoreUnknown=1;IP=10.80.6.9", list: (c) => single("df-hlr", { type: "ptp", ipam: { type: "host-local", dataDir: c.dataDir, ranges: [[{ subnet: "10.80.6.0/24", rangeStart: "10.80.6.5", rangeEnd: "10.80.6.20", gateway: "10.80.6.1" }]] } }) },
  // ---------------------------------------------------------------- chained plugins
  {
    name: "bridge → portmap (snat, portMappings)",
    plugins: ["bridge", "host-local", "portmap"],
    capabilityArgs: { portMappings: [{ hostPort: 38080, containerPort: 80, protocol: "tcp" }, { hostPort: 38053, containerPort: 53, protocol: "udp" }] },
    list: (c) => ({ name: "df-pm", cniVersion: V, plugins: [bridge(c, { ipMasq: true }), { type: "portmap", snat: true, capabilities: { portMappings: true } }] }),
  },
  { name: "bridge → firewall (iptables)", plugins: ["bridge", "host-local", "firewall"], list: (c) => ({ name: "df-fw", cniVersion: V, plugins: [bridge(c), { type: "firewall", backend: "iptables" }] }) },
  { name: "bridge → firewall ingressPolicy same-bridge", plugins: ["bridge", "host-local", "firewall"], list: (c) => ({ name: "df-fwi", cniVersion: V, plugins: [bridge(c), { type: "firewall", ingressPolicy: "same-bridge" }] }) },
  {
    name: "bridge → tuning (mtu, mac, promisc, sysctl)",
    plugins: ["bridge", "host-local", "tuning"],
    list: (c) => ({ name: "df-tu", cniVersion: V, plugins: [bridge(c), { type: "tuning", mtu: 1300, mac: "02:00:00:80:07:01", promisc: true, sysctl: { "net.ipv4.conf.eth0.arp_notify": "1" } }] }),
  },
  {
    name: "ptp → bandwidth (ingress + egress)",
    plugins: ["ptp", "host-local", "bandwidth"],
    list: (c) => ({ name: "df-bw", cniVersion: V, plugins: [ptp(c), { type: "bandwidth", ingressRate: 800000, ingressBurst: 100000, egressRate: 400000, egressBurst: 50000 }] }),
  },
  {
    name: "ptp → bandwidth (runtimeConfig capability)",
    plugins: ["ptp", "host-local", "bandwidth"],
    capabilityArgs: { bandwidth: { ingressRate: 1000000, ingressBurst: 200000, egressRate: 1000000, egressBurst: 200000 } },
    list: (c) => ({ name: "df-bwc", cniVersion: V, plugins: [ptp(c), { type: "bandwidth", capabilities: { bandwidth: true } }] }),
  },
  { name: "ptp → sbr", plugins: ["ptp", "host-local", "sbr"], list: (c) => ({ name: "df-sbr", cniVersion: V, plugins: [ptp(c), { type: "sbr" }] }) },
  {
    name: "ptp dual-stack → portmap (hostIP, IPv4 + IPv6)",
    plugins: ["ptp", "host-local", "portmap"],
    capabilityArgs: { portMappings: [{ hostPort: 38081, containerPort: 81, protocol: "tcp" }, { hostPort: 38082, containerPort: 82, protocol: "udp", hostIP: "127.0.0.1" }] },
    list: (c) => ({
      name: "df-pm6",
      cniVersion: V,
      plugins: [{ ...ptp(c, {}, ["10.80.14.0/24", "fd80:14::/64"]), ipam: { ...hl(c.dataDir, ["10.80.14.0/24", "fd80:14::/64"]), routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }] } }, { type: "portmap", capabilities: { portMappings: true } }],
    }),
  },
  { name: "bridge → tuning allmulti", plugins: ["bridge", "host-local", "tuning"], list: (c) => ({ name: "df-tua", cniVersion: V, plugins: [bridge(c), { type: "tuning", allmulti: true }] }) },
  { name: "bridge + static from CNI_ARGS IP/GATEWAY", plugins: ["bridge", "static"], args: "IgnoreUnknown=1;IP=10.80.15.7/24;GATEWAY=10.80.15.1", list: () => single("df-brsa", { type: "bridge", bridge: "dfbr0", isGateway: true, ipam: { type: "static", routes: [{ dst: "0.0.0.0/0" }] } }) },
  // ---------------------------------------------------------------- interface plugins
  {
    name: "macvlan bridge mode on a veth master",
    plugins: ["macvlan", "host-local"],
    kernel: ["macvlan"],
    prepare: (n) => veth(n, "dfm0", "dfm0p"),
    list: (c) => single("df-mv", { type: "macvlan", master: "dfm0", mode: "bridge", ipam: hl(c.dataDir, ["10.80.8.0/24"]) }),
  },
  {
    name: "macvlan private mtu 1400",
    plugins: ["macvlan", "host-local"],
    kernel: ["macvlan"],
    prepare: (n) => veth(n, "dfm1", "dfm1p"),
    list: (c) => single("df-mvp", { type: "macvlan", master: "dfm1", mode: "private", mtu: 1400, ipam: hl(c.dataDir, ["10.80.16.0/24"]) }),
  },
  {
    name: "ipvlan l2",
    plugins: ["ipvlan", "host-local"],
    kernel: ["ipvlan"],
    prepare: (n) => veth(n, "dfi0", "dfi0p"),
    list: (c) => single("df-ipv", { type: "ipvlan", master: "dfi0", mode: "l2", ipam: hl(c.dataDir, ["10.80.9.0/24"]) }),
  },
  {
    name: "vlan 42 mtu 1400",
    plugins: ["vlan", "host-local"],
    kernel: ["vlan"],
    prepare: (n) => veth(n, "dfv0", "dfv0p"),
    list: (c) => single("df-vl", { type: "vlan", master: "dfv0", vlanId: 42, mtu: 1400, ipam: hl(c.dataDir, ["10.80.10.0/24"]) }),
  },
  {
    name: "host-device by name",
    plugins: ["host-device", "host-local"],
    prepare: (n) => veth(n, "dfhd0", "dfhd0p"),
    list: (c) => single("df-hd", { type: "host-device", device: "dfhd0", ipam: hl(c.dataDir, ["10.80.11.0/24"]) }),
  },
  {
    name: "ptp → vrf",
    plugins: ["ptp", "host-local", "vrf"],
    kernel: ["vrf"],
    list: (c) => ({ name: "df-vrf", cniVersion: V, plugins: [ptp(c), { type: "vrf", vrfname: "dfvrf0" }] }),
  },
  {
    name: "macvlan + dhcp (dnsmasq, each side's own daemon)",
    plugins: ["macvlan", "dhcp"],
    kernel: ["macvlan"],
    prepare: (n, side) => startDhcpOnNode(n, side.binDir, { master: "dfd0", server: "10.80.13.1/24", lease: "10.80.13.50" }),
    list: (c) => single("df-dhcp", { type: "macvlan", master: "dfd0", mode: "bridge", ipam: { type: "dhcp", daemonSocketPath: c.prepared?.socket ?? "" } }),
  },
  // ---------------------------------------------------------------- bad inputs: code + exit status
  { name: "bad: wrong JSON type (ipam.subnet: 5)", plugins: ["bridge"], badInput: true, list: () => single("df-bad", { type: "bridge", bridge: "x", ipam: { type: "host-local", subnet: 5 } }) },
  { name: "bad: unsupported cniVersion", plugins: ["bridge"], badInput: true, list: (c) => single("df-bad", bridge(c), "9.9.9") },
  { name: "bad: ipam plugin not found", plugins: ["bridge"], badInput: true, list: () => single("df-bad", { type: "bridge", bridge: "dfbr0", ipam: { type: "no-such-ipam" } }) },
  { name: "bad: host-local invalid subnet", plugins: ["ptp", "host-local"], badInput: true, list: (c) => single("df-bad", { type: "ptp", ipam: { type: "host-local", dataDir: c.dataDir, ranges: [[{ subnet: "10.80.300.0/24" }]] } }) },
  { name: "bad: ptp without ipam", plugins: ["ptp"], badInput: true, list: () => single("df-bad", { type: "ptp" }) },
  { name: "bad: bridge hairpinMode with promiscMode", plugins: ["bridge", "host-local"], badInput: true, list: (c) => single("df-bad", bridge(c, { hairpinMode: true, promiscMode: true })) },
  { name: "bad: bridge mtu too small for the kernel", plugins: ["bridge", "host-local"], badInput: true, list: (c) => single("df-bad", bridge(c, { mtu: 10 })) },
  { name: "bad: macvlan missing master link", plugins: ["macvlan", "host-local"], badInput: true, list: (c) => single("df-bad", { type: "macvlan", master: "nosuchdev0", ipam: hl(c.dataDir, ["10.80.12.0/24"]) }) },
  { name: "bad: portmap without prevResult", plugins: ["portmap"], badInput: true, capabilityArgs: { portMappings: [{ hostPort: 1, containerPort: 1, protocol: "tcp" }] }, list: () => single("df-bad", { type: "portmap", capabilities: { portMappings: true } }) },
  { name: "bad: tuning sysctl outside net.*", plugins: ["ptp", "host-local", "tuning"], badInput: true, list: (c) => ({ name: "df-bad", cniVersion: V, plugins: [ptp(c), { type: "tuning", sysctl: { "kernel.hostname": "x" } }] }) },
  { name: "bad: bandwidth burst without rate", plugins: ["ptp", "host-local", "bandwidth"], badInput: true, list: (c) => ({ name: "df-bad", cniVersion: V, plugins: [ptp(c), { type: "bandwidth", ingressBurst: 100 }] }) },
];
