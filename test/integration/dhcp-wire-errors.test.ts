/**
 * What the dhcp daemon answers over the socket when a lease cannot be had: exactly upstream's
 * texts (plugins/ipam/dhcp daemon.go/lease.go/options.go, pkg/ns, Go net/rpc), because the plugin
 * half in front of it may be Go's, which prints them as `error calling DHCP.Allocate: <text>` and
 * upstream's own tests compare that string (dhcp_test.go: `... no more tries`). Why an attempt
 * failed goes to the daemon's log only. Each call is made over RPC as the Go plugin makes it; where
 * the Go 1.1.1 daemon is installed, it gets the same calls and must answer the same.
 * Root only; inside the test process's throwaway netns.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CmdArgsType, argsToGob, type RpcArgs } from "../../ipam/dhcp/rpc-protocol.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDaemon } from "../../ipam/dhcp/rpc-client.ts";
import { runAllCleanups } from "../harness/cleanup.ts";
import { dhcpConf, sh, startDaemon, type Daemon } from "../harness/dhcp-lab.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { suiteTempDir } from "../harness/tempdir.ts";

afterAll(() => runAllCleanups());

const T = 120_000;

interface Call {
  method: string;
  netns?: string;
  ifName?: string;
  args?: string;
  ipam?: Record<string, unknown>;
  /** The whole config instead of {@link dhcpConf}'s. */
  config?: Record<string, unknown>;
}

/** The `Error` of one RPC answer ("" for success), the call made as upstream's plugin makes it. */
async function answer(d: Daemon, ns: string, c: Call): Promise<string> {
  const a: RpcArgs = {
    containerID: "wire-errors",
    netns: c.netns ?? ns,
    ifName: c.ifName ?? "eth0",
    args: c.args ?? "",
    path: "/opt/cni/bin",
    stdinData: JSON.stringify(c.config ?? dhcpConf(d.socketPath, c.ipam)),
  };
  return withDaemon(d.socketPath, PROCESS_SCOPE, async (client) => {
    try {
      await client.call(c.method, CmdArgsType, argsToGob(a));
      return "";
    } catch (err) {
      return (err as Error).message;
    }
  });
}

const LONG = "a".repeat(256);

/** Calls whose answer upstream HEAD's daemon (and 1.1.1's) gives, with that exact text. */
const CASES: [string, Call, string][] = [
  ["netns path missing", { method: "DHCP.Allocate", netns: "/nonexistent-cni-netns" }, 'failed to Statfs "/nonexistent-cni-netns": no such file or directory'],
  ["netns path not a namespace (sysfs)", { method: "DHCP.Allocate", netns: "/sys/kernel" }, 'unknown FS magic on "/sys/kernel": 62656572'],
  ["netns path relative (to the daemon's directory)", { method: "DHCP.Allocate", netns: "no/such/ns" }, 'failed to Statfs "no/such/ns": no such file or directory'],
  ["no such interface", { method: "DHCP.Allocate", ifName: "eth9" }, 'error looking up "eth9": Link not found'],
  ["interface name with a control character", { method: "DHCP.Allocate", ifName: "e\x01h" }, 'error looking up "e\\x01h": Link not found'],
  ["no interface name", { method: "DHCP.Allocate", ifName: "" }, 'error looking up "": Link not found'],
  [
    "ipam not an object",
    { method: "DHCP.Allocate", config: { cniVersion: "1.0.0", name: "dhcpnet", ipam: 5 } },
    "error parsing netconf: json: cannot unmarshal number into Go struct field NetConf.ipam of type main.IPAMConfig",
  ],
  [
    "option name neither known nor a number",
    { method: "DHCP.Allocate", ipam: { provide: [{ option: "nope", value: "x" }] } },
    'Can not parse option "nope": Can not parse option: strconv.ParseUint: parsing "nope": invalid syntax',
  ],
  [
    "option number out of range",
    { method: "DHCP.Allocate", ipam: { request: [{ option: "256" }] } },
    'Can not parse option "256": Can not parse option: strconv.ParseUint: parsing "256": value out of range',
  ],
  [
    "option name with a control character",
    { method: "DHCP.Allocate", ipam: { request: [{ option: "n\u00e9\x02" }] } },
    'Can not parse option "né\\x02": Can not parse option: strconv.ParseUint: parsing "né\\x02": invalid syntax',
  ],
  ["option value longer than 255 bytes", { method: "DHCP.Allocate", ipam: { provide: [{ option: "host-name", value: LONG }] } }, `value too long for option "host-name": "${LONG}"`],
  ["no DHCP server answers", { method: "DHCP.Allocate" }, "no more tries"],
  ["unknown method", { method: "DHCP.Nuke" }, "rpc: can't find method DHCP.Nuke"],
  ["unknown service", { method: "Lease.Allocate" }, "rpc: can't find service Lease.Allocate"],
  ["no service in the name", { method: "DHCPAllocate" }, "rpc: service/method request ill-formed: DHCPAllocate"],
  ["release of a lease never held", { method: "DHCP.Release" }, ""],
  ["release without an interface name", { method: "DHCP.Release", ifName: "" }, ""],
];

describe.skipIf(process.getuid?.() !== 0)("dhcp daemon: error texts over the wire", () => {
  const dir = suiteTempDir("cni-dhcp-wire-");
  let ns: ContainerNetns;
  beforeAll(async () => {
    // eth0 is a veth whose peer is in the same namespace: DISCOVERs go out and nobody answers.
    ns = await createContainerNetns();
    sh(["nsenter", `--net=${ns.path}`, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "peer0"]);
    sh(["nsenter", `--net=${ns.path}`, "ip", "link", "set", "peer0", "up"]);
  });
  afterAll(async () => {
    await ns?.destroy();
  });

  test("ours: upstream's texts; the reason for `no more tries` is in the daemon's log", async () => {
    const d = await startDaemon(join(dir, "ours"), ["-timeout", "1s", "-resendtimeout", "3s"]);
    try {
      for (const [what, call, text] of CASES) expect({ what, error: await answer(d, ns.path, call) }).toEqual({ what, error: text });
      expect(d.log()).toContain("wire-errors/dhcpnet/eth0: no lease: no more tries: no reply after 3 tries of 1000 ms");
      // Beyond upstream's text, CNI_ARGS values name their key; the value printed is the offending one.
      const fromArg = { method: "DHCP.Allocate", args: `HOST=${LONG}`, ipam: { provide: [{ option: "host-name", fromArg: "HOST" }] } };
      expect(await answer(d, ns.path, fromArg)).toBe(`value too long for option "host-name" from CNI_ARGS "HOST": "${LONG}"`);
    } finally {
      await d.signal("SIGTERM");
    }
  }, T);

  test.skipIf(!hasGoPlugin("dhcp"))("the Go 1.1.1 daemon answers the same calls with the same texts", async () => {
    // 1.1.1 gives up after its fast retries and one slow one (about 15 s with these flags).
    const d = await startDaemon(join(dir, "go"), ["-timeout", "1s", "-resendmax", "1s"], {}, true);
    try {
      for (const [what, call, text] of CASES) expect({ what, error: await answer(d, ns.path, call) }).toEqual({ what, error: text });
    } finally {
      await d.signal("SIGTERM");
    }
  }, T);
});
