/**
 * Bad-input probes for the chained plugins (ids numbering them: P19 tuning, P20 bandwidth, P28 sbr)
 * run the same way on our plugins and on the Go 1.1.1 reference (/usr/lib/cni), each in fresh
 * container namespaces behind a real bridge + host-local attachment (through the conflist runner).
 * Ours must behave like Go or better: exit status 1 with one JSON error, the expected CNI code, a
 * message naming the offending field, and nothing left behind. The Go runs assert what §4.2
 * recorded for 1.1.1, so the comparison is visible in the test names and fails loudly if the
 * reference ever behaves differently.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { goIfbName, ifbLinks, ingressFiltersOf, qdiscsOf, tc } from "../harness/bandwidth-helpers.ts";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { ipJson } from "../harness/ip-oracle.ts";
import { linkState, sysctlIn } from "../harness/meta-tuning-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const SOMAXCONN = "/proc/sys/net/core/somaxconn";
const DOMAINNAME = "/proc/sys/kernel/domainname";
const BRIDGE = "pr5br";
const NETWORK = "pr5";

type Impl = { name: "ours" | "go"; dir: string };
const IMPLS: Impl[] = [
  { name: "ours", dir: DIST_BIN },
  { name: "go", dir: GO_BIN_DIR },
];

let seq = 0;

interface Pod {
  impl: Impl;
  netns: string;
  containerID: string;
  runner: ConflistRunner;
  /** The bridge's result for each attached ifname (the prevResult a meta plugin gets). */
  results: Map<string, Record<string, unknown>>;
}

function bridgeList(dataDir: string): NetworkConfigList {
  return {
    name: NETWORK,
    cniVersion: "1.0.0",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE,
        isGateway: true,
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.125.0.0/24" }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
    ],
  };
}

/** A container with `ifnames` attached to the bridge network by `impl`'s bridge + host-local. */
async function pod(impl: Impl, ifnames: string[] = ["eth0"]): Promise<Pod> {
  const ns = await createContainerNetns();
  const runner = new ConflistRunner({ path: [impl.dir], cacheDir: makeTempDir("pr5-cache-") });
  registerCleanup(`bridge ${BRIDGE} and IFBs`, () => {
    Bun.spawnSync(["ip", "link", "del", BRIDGE], { stderr: "ignore" });
    for (const ifb of ifbLinks()) Bun.spawnSync(["ip", "link", "del", ifb], { stderr: "ignore" });
  });
  const list = bridgeList(makeTempDir("pr5-ipam-"));
  const containerID = `pr5-${impl.name}-${process.pid}-${++seq}`;
  const results = new Map<string, Record<string, unknown>>();
  for (const ifName of ifnames) results.set(ifName, await runner.add(list, { containerID, netns: ns.path, ifName }));
  return { impl, netns: ns.path, containerID, runner, results };
}

/** Runs one meta plugin command for `ifName` of the pod, config as libcni builds it (prevResult = bridge's result). */
async function meta(
  p: Pod,
  command: string,
  conf: Record<string, unknown> | string,
  opts: { ifName?: string; netns?: string; prev?: boolean } = {},
): Promise<PluginRun> {
  const ifName = opts.ifName ?? "eth0";
  let config: unknown = conf;
  if (typeof conf !== "string") {
    const full: Record<string, unknown> = { cniVersion: "1.0.0", name: NETWORK, ...conf };
    if (opts.prev !== false) full.prevResult = p.results.get(ifName);
    config = full;
  }
  const type = typeof conf === "string" ? String((JSON.parse(conf) as { type: string }).type) : String(conf.type);
  return execPlugin(type, { command, containerID: p.containerID, netns: opts.netns ?? p.netns, ifName, config, binDir: p.impl.dir });
}

/** Go's error JSON, or ours: exit 1, one error object; returns it for the per-impl assertions. */
function cniError(run: PluginRun): { code: number; msg: string } {
  expect({ status: run.status, signal: run.signal, isError: typeof run.json?.code === "number", stdout: run.stdout }).toMatchObject({
    status: 1,
    signal: null,
    isError: true,
  });
  // Ours adds the spec's cniVersion key (DIFFERENCES.md); Go 1.1.1 omits it.
  const { cniVersion: _version, ...error } = run.json as { cniVersion?: string; code: number; msg: string };
  return error;
}

describe.skipIf(!sandboxed())("P19 tuning probes", () => {
  useFixtureCleanup();

  for (const impl of IMPLS) {
    const skip = impl.name === "go" && !hasGoPlugin("tuning");

    test.skipIf(skip)(`${impl.name}: a kernel.* key is refused, naming the key; nothing is written`, async () => {
      const p = await pod(impl);
      const before = sysctlIn(p.netns, SOMAXCONN);
      const dom = readFileSync(DOMAINNAME, "utf8");
      // one key only: Go writes keys in random map order and would write a good key before failing
      const run = await meta(p, "ADD", { type: "tuning", dataDir: makeTempDir("pr5-tu-"), sysctl: { "kernel.domainname": "pwned" } });
      const err = cniError(run);
      // Both quote the key as written.
      expect(err).toEqual({ code: 999, msg: 'invalid net sysctl key: "kernel.domainname"' });
      expect(readFileSync(DOMAINNAME, "utf8")).toBe(dom);
      expect(sysctlIn(p.netns, SOMAXCONN)).toBe(before);
    });

    test.skipIf(skip)(`${impl.name}: a traversal key (net/../kernel/domainname) is neutralised and refused`, async () => {
      const p = await pod(impl);
      const dom = readFileSync(DOMAINNAME, "utf8");
      const run = await meta(p, "ADD", { type: "tuning", dataDir: makeTempDir("pr5-tu-"), sysctl: { "net/../kernel/domainname": "pwned" } });
      const err = cniError(run);
      expect(err.msg).toContain("kernel");
      expect(readFileSync(DOMAINNAME, "utf8")).toBe(dom);
    });

    test.skipIf(skip)(`${impl.name}: duplicate sysctl keys (Go 1.1.1 accepts them, HEAD and ours refuse)`, async () => {
      const p = await pod(impl);
      const before = sysctlIn(p.netns, SOMAXCONN);
      const prev = JSON.stringify(p.results.get("eth0"));
      const raw = `{"cniVersion":"1.0.0","name":"${NETWORK}","type":"tuning","dataDir":${JSON.stringify(makeTempDir("pr5-tu-"))},` +
        `"sysctl":{"net.core.somaxconn":"501","net.core.somaxconn":"502"},"prevResult":${prev}}`;
      const run = await meta(p, "ADD", raw);
      if (impl.name === "go") {
        expectSuccess(run);
        expect(sysctlIn(p.netns, SOMAXCONN)).toBe("502"); // the last one wins
      } else {
        expectCniError(run, { code: 999, msg: "duplicated sysctl keys are not allowed" }); // HEAD's text and code
        expect(sysctlIn(p.netns, SOMAXCONN)).toBe(before);
      }
    });

    test.skipIf(skip)(`${impl.name}: a value with a newline`, async () => {
      const p = await pod(impl);
      const before = sysctlIn(p.netns, SOMAXCONN);
      const run = await meta(p, "ADD", { type: "tuning", dataDir: makeTempDir("pr5-tu-"), sysctl: { "net.core.somaxconn": "600\n" } });
      if (impl.name === "go") {
        // §4.2: written verbatim; the kernel takes "600\n" as 600
        expectSuccess(run);
        expect(sysctlIn(p.netns, SOMAXCONN)).toBe("600");
      } else {
        // ours: either refused naming the key with nothing written, or written like Go — never half done
        if (run.status === 0) expect(sysctlIn(p.netns, SOMAXCONN)).toBe("600");
        else {
          expect(cniError(run).msg).toContain("somaxconn");
          expect(sysctlIn(p.netns, SOMAXCONN)).toBe(before);
        }
      }
    });

    test.skipIf(skip)(`${impl.name}: an impossible MTU fails naming the interface; a good MTU is restored on DEL`, async () => {
      const p = await pod(impl);
      const dataDir = makeTempDir("pr5-tu-");
      const orig = linkState(p.netns, "eth0").mtu;
      const bad = await meta(p, "ADD", { type: "tuning", dataDir, mtu: 100_000, sysctl: { "net.core.somaxconn": "555" } });
      const err = cniError(bad);
      expect(linkState(p.netns, "eth0").mtu).toBe(orig);
      if (impl.name === "go") {
        expect(err).toEqual({ code: 999, msg: "invalid argument" }); // §4.2: the raw kernel error
      } else {
        // the kernel's extended ack names the field ("mtu greater than device maximum")
        expect(err.code).toBe(999);
        expect(err.msg).toMatch(/invalid argument.*mtu/i);
        expect(sysctlIn(p.netns, SOMAXCONN)).not.toBe("555"); // ours undoes the sysctl of a failed ADD
      }
      expectSuccess(await meta(p, "DEL", { type: "tuning", dataDir, mtu: 100_000 }));

      const good = await meta(p, "ADD", { type: "tuning", dataDir, mtu: 1280 });
      expectSuccess(good);
      expect(linkState(p.netns, "eth0").mtu).toBe(1280);
      expectSuccess(await meta(p, "DEL", { type: "tuning", dataDir, mtu: 1280 }));
      expect(linkState(p.netns, "eth0").mtu).toBe(orig);
    });
  }
});

describe.skipIf(!sandboxed())("P20 bandwidth probes", () => {
  useFixtureCleanup();
  const LIMITS = { ingressRate: 8_000_000, ingressBurst: 80_000, egressRate: 8_000_000, egressBurst: 80_000 };

  for (const impl of IMPLS) {
    const skip = impl.name === "go" && !hasGoPlugin("bandwidth");

    test.skipIf(skip)(`${impl.name}: second interface of one pod on one network (Go: "file exists", ours: its own IFB)`, async () => {
      const p = await pod(impl, ["eth0", "eth1"]);
      const conf = { type: "bandwidth", ...LIMITS };
      expectSuccess(await meta(p, "ADD", conf, { ifName: "eth0" }));
      const second = await meta(p, "ADD", conf, { ifName: "eth1" });
      const first = goIfbName(NETWORK, p.containerID);
      if (impl.name === "go") {
        expect(cniError(second).msg).toContain("file exists");
        expect(ifbLinks()).toEqual([first]);
        // DEL of eth1 (whose ADD failed) removes the IFB eth0 relies on
        expectSuccess(await meta(p, "DEL", conf, { ifName: "eth1" }));
        expect(ifbLinks()).toEqual([]);
      } else {
        expectSuccess(second);
        const ifbs = ifbLinks();
        expect(ifbs).toContain(first); // the first keeps upstream's name (interop)
        expect(ifbs.length).toBe(2);
        expectSuccess(await meta(p, "DEL", conf, { ifName: "eth1" }));
        expect(ifbLinks()).toEqual([first]);
        expectSuccess(await meta(p, "DEL", conf, { ifName: "eth0" }));
        expect(ifbLinks()).toEqual([]);
      }
    });

    const bad: [string, Record<string, unknown>, string, RegExp][] = [
      ["rate without burst", { ingressRate: 8_000_000 }, "if rate is set, burst must also be set", /burst/],
      ["a negative rate", { ingressRate: -1, ingressBurst: 80_000 }, "", /ingressRate|int|uint|unmarshal/i],
      ["a burst over 4 GB", { ingressRate: 8_000_000, ingressBurst: 40_000_000_000 }, "", /burst/i],
    ];
    for (const [what, limits, goText, ourField] of bad) {
      test.skipIf(skip)(`${impl.name}: ${what} is refused, nothing created`, async () => {
        const p = await pod(impl);
        const hostVeth = String((p.results.get("eth0")!.interfaces as { name: string }[])[1]!.name);
        const run = await meta(p, "ADD", { type: "bandwidth", ...limits });
        const err = cniError(run);
        if (goText !== "") expect(err.msg).toContain(goText);
        if (impl.name === "ours") {
          expect(err.msg).toMatch(ourField);
          expect(err.code).toBe(7);
        }
        expect(ifbLinks()).toEqual([]);
        expect(qdiscsOf(hostVeth).filter((q) => q.kind === "tbf" || q.kind === "ingress")).toEqual([]);
      });
    }

    test.skipIf(skip)(`${impl.name}: re-ADD over a leftover TBF (Go: "file exists", ours: replaced); DEL leaves nothing`, async () => {
      const p = await pod(impl);
      const hostVeth = String((p.results.get("eth0")!.interfaces as { name: string }[])[1]!.name);
      tc("qdisc", "add", "dev", hostVeth, "root", "handle", "1:", "tbf", "rate", "1mbit", "burst", "10kb", "latency", "25ms");
      const conf = { type: "bandwidth", ...LIMITS };
      const run = await meta(p, "ADD", conf);
      if (impl.name === "go") {
        expect(cniError(run).msg).toContain("file exists");
      } else {
        expectSuccess(run);
        const tbf = qdiscsOf(hostVeth).find((q) => q.kind === "tbf");
        expect(tbf?.options?.rate).toBe(1_000_000); // 8 Mbit/s = 1e6 bytes/s, not the leftover's 1mbit
      }
      expectSuccess(await meta(p, "DEL", conf));
      expect(ifbLinks()).toEqual([]);
      if (impl.name === "ours") {
        // TBF and redirect gone from the surviving host veth (Go leaves both); the empty ingress
        // qdisc stays, as ours reuses one it finds and cannot tell whose it was
        expect(qdiscsOf(hostVeth).filter((q) => q.kind === "tbf")).toEqual([]);
        expect(ingressFiltersOf(hostVeth)).toEqual([]);
      }
    });
  }
});

describe.skipIf(!sandboxed())("P28 sbr probes", () => {
  useFixtureCleanup();

  function rules(netns: string): { priority: number; src?: string; table?: string }[] {
    return ipJson<{ priority: number; src?: string; table?: string }[]>(netns, "-4", "rule", "show").filter((r) => r.priority !== 0 && r.table !== "main" && r.table !== "default");
  }

  for (const impl of IMPLS) {
    const skip = impl.name === "go" && !hasGoPlugin("sbr");

    test.skipIf(skip)(`${impl.name}: two interfaces get tables 100 and 101; DEL removes the rules`, async () => {
      const p = await pod(impl, ["eth0", "eth1"]);
      expectSuccess(await meta(p, "ADD", { type: "sbr" }, { ifName: "eth0" }));
      expectSuccess(await meta(p, "ADD", { type: "sbr" }, { ifName: "eth1" }));
      const tables = rules(p.netns).map((r) => r.table).sort();
      expect(tables).toEqual(["100", "101"]);
      expect(ipJson<unknown[]>(p.netns, "-4", "route", "show", "table", "100").length).toBeGreaterThan(0);
      expectSuccess(await meta(p, "DEL", { type: "sbr" }, { ifName: "eth1" }));
      expectSuccess(await meta(p, "DEL", { type: "sbr" }, { ifName: "eth0" }));
      expect(rules(p.netns)).toEqual([]);
    });

    test.skipIf(skip)(`${impl.name}: DEL after the interface is gone (Go 1.1.1 fails, ours succeeds and removes the rule)`, async () => {
      const p = await pod(impl);
      expectSuccess(await meta(p, "ADD", { type: "sbr" }));
      expect(rules(p.netns).length).toBe(1);
      Bun.spawnSync(["nsenter", `--net=${p.netns}`, "--", "ip", "link", "del", "eth0"]);
      const run = await meta(p, "DEL", { type: "sbr" });
      if (impl.name === "go") {
        cniError(run);
      } else {
        expectSuccess(run);
        expect(rules(p.netns)).toEqual([]);
      }
    });

    test.skipIf(skip)(`${impl.name}: DEL with a netns path that does not exist (Go creates it as a file; ours: rc 0, nothing created)`, async () => {
      const p = await pod(impl);
      const missing = join(makeTempDir("pr5-nons-"), "gone-netns");
      const run = await meta(p, "DEL", { type: "sbr" }, { netns: missing });
      if (impl.name === "go") {
        cniError(run);
        expect(existsSync(missing)).toBe(true);
      } else {
        expectSuccess(run);
        expect(existsSync(missing)).toBe(false);
      }
    });
  }
});
