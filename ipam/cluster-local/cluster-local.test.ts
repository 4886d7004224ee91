/**
 * cluster-local against an in-memory etcd gateway (etcd/testing.ts): configuration, the client's
 * failover and fault codes, allocation order, races, retries, DEL, GC and STATUS. The real
 * three-member cluster is test/integration/cluster-local.test.ts.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CniError, toErrorJson } from "../../shared/cni/errors.ts";
import type { CmdArgs, Result } from "../../shared/cni/types.ts";
import { clusterLocalPlugin } from "./cluster-local.ts";
import { loadClusterLocalConfig, type EtcdConfig } from "./config.ts";
import { EtcdClient } from "./etcd/client.ts";
import { FakeEtcd } from "./etcd/testing.ts";
import { prefixEnd, txnWire } from "./etcd/wire.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

const fakes: FakeEtcd[] = [];
function fake(): FakeEtcd {
  const f = new FakeEtcd();
  fakes.push(f);
  return f;
}
afterEach(() => {
  for (const f of fakes.splice(0)) f.stop();
});
const dir = mkdtempSync(join(tmpdir(), "cl-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A port nothing listens on (a server started and stopped). */
function deadEndpoint(): string {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const url = `http://127.0.0.1:${s.port}`;
  void s.stop(true);
  return url;
}

function conf(endpoints: string[], ipam: Record<string, unknown> = {}, etcd: Record<string, unknown> = {}, cniVersion = "1.1.0"): Record<string, unknown> {
  return { cniVersion, name: "net1", type: "macvlan", ipam: { type: "cluster-local", ranges: [[{ subnet: "10.1.0.0/29" }]], ...ipam, etcd: { endpoints, node: "n1", ...etcd } } };
}

function args(config: Record<string, unknown>, containerID = "c1", extra: Partial<CmdArgs> = {}): CmdArgs {
  return withDelegate({
    command: "ADD",
    containerID,
    netns: "/proc/self/ns/net",
    ifName: "eth0",
    args: "",
    path: "",
    stdinData: new Uint8Array(),
    config,
    cniVersion: String(config.cniVersion),
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
    ...extra,
  });
}

async function failure(p: Promise<unknown>): Promise<{ code: number; msg: string }> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    const j = toErrorJson(err);
    return { code: j.code, msg: j.msg };
  }
  throw new Error("expected a failure");
}

const addresses = (r: Result): string[] => (r.ips ?? []).map((i) => i.address);
const add = (c: Record<string, unknown>, id = "c1", extra: Partial<CmdArgs> = {}) => clusterLocalPlugin.add(args(c, id, extra)) as Promise<Result>;

describe("config", () => {
  const load = (etcd: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) =>
    loadClusterLocalConfig({ config: { name: "n", cniVersion: "1.0.0", ipam: { type: "cluster-local", subnet: "10.1.0.0/24", ...extra, ...(etcd === undefined ? {} : { etcd }) } }, args: "" });
  const refusal = (etcd: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) => {
    try {
      load(etcd, extra);
    } catch (err) {
      expect((err as CniError).code).toBe(7);
      return (err as Error).message;
    }
    throw new Error("expected a config error");
  };

  test("defaults: prefix, timeouts, node from the host name; bare host:port is http, https with TLS files", () => {
    const c = load({ endpoints: ["10.0.0.5:2379", "https://etcd-2:2379/"] }).etcd;
    expect(c).toMatchObject({ endpoints: ["http://10.0.0.5:2379", "https://etcd-2:2379"], prefix: "/cni/ipam/", timeoutMs: 10_000, endpointTimeoutMs: 2_000 });
    expect(c.node).not.toBe("");
    const ca = join(dir, "ca.pem");
    const t = load({ endpoints: ["[fd00::5]:2379"], caFile: ca, prefix: "/x", node: "w1", timeout: "1m30s", endpointTimeout: "250ms" }).etcd;
    expect(t).toMatchObject({ endpoints: ["https://[fd00::5]:2379"], caFile: ca, prefix: "/x/", node: "w1", timeoutMs: 90_000, endpointTimeoutMs: 250 });
  });

  test("host-local's fields are read as host-local reads them", () => {
    const c = loadClusterLocalConfig({ config: { name: "n", cniVersion: "1.0.0", ipam: { type: "cluster-local", ranges: [[{ subnet: "10.2.0.0/24", exclude: ["10.2.0.9"] }], [{ subnet: "fd00::/120" }]], routes: [{ dst: "0.0.0.0/0" }], etcd: { endpoints: ["h:1"] } }, args: { cni: { ips: ["10.2.0.7"] } } }, args: "" });
    expect(c.rangeSets.length).toBe(2);
    expect(c.requestedIPs.length).toBe(1);
    expect(c.routes).toEqual([{ dst: "0.0.0.0/0" }]);
  });

  test("every problem is code 7 naming the field", () => {
    expect(refusal(undefined)).toContain("IPAM config missing 'etcd' key");
    expect(refusal({})).toContain("etcd.endpoints is empty");
    expect(refusal({ endpoints: [""] })).toContain("invalid etcd.endpoints[0]: empty");
    expect(refusal({ endpoints: ["h:1", "unix:///run/etcd.sock"] })).toContain("invalid etcd.endpoints[1]");
    expect(refusal({ endpoints: ["http://h:2379/v3"] })).toContain("without path");
    expect(refusal({ endpoints: ["http://h:2379"], caFile: "/ca" })).toContain("etcd.endpoints[0]");
    expect(refusal({ endpoints: ["h:1"], certFile: "/c" })).toContain("etcd.certFile and etcd.keyFile go together");
    expect(refusal({ endpoints: ["h:1"], timeout: "10" })).toContain("invalid etcd.timeout: time: missing unit");
    expect(refusal({ endpoints: ["h:1"], endpointTimeout: "-1s" })).toContain("invalid etcd.endpointTimeout");
    expect(refusal({ endpoints: "h:1" })).toContain("EtcdConfig.ipam.etcd.endpoints");
    expect(refusal({ endpoints: ["h:1"], caFile: "a\0b" })).toContain("etcd.caFile");
    expect(refusal({ endpoints: ["h:1"] }, { subnet: "10.1.0.1/24" })).toContain("host bits set");
  });
});

describe("wire", () => {
  test("prefix ends, and a txn in the gateway's proto JSON (snake_case, base64, compare fields)", () => {
    expect(prefixEnd("/a/b/")).toBe("/a/b0");
    const w = txnWire({
      compare: [{ key: "/k", target: "CREATE", result: "EQUAL", value: 0 }, { key: "/m", target: "MOD", result: "EQUAL", value: 7 }],
      success: [{ put: { key: "/k", value: "v" } }, { txn: { compare: [], success: [{ deleteRange: { key: "/k" } }] } }],
      failure: [{ range: { key: "/k", countOnly: true } }],
    });
    expect(w).toEqual({
      compare: [
        { key: "L2s=", target: "CREATE", result: "EQUAL", create_revision: "0" },
        { key: "L20=", target: "MOD", result: "EQUAL", mod_revision: "7" },
      ],
      success: [{ request_put: { key: "L2s=", value: "dg==" } }, { request_txn: { compare: [], success: [{ request_delete_range: { key: "L2s=" } }], failure: [] } }],
      failure: [{ request_range: { key: "L2s=", count_only: true } }],
    });
  });
});

describe("client: endpoints and faults", () => {
  const etcdConf = (endpoints: string[], extra: Partial<EtcdConfig> = {}): EtcdConfig => ({
    endpoints,
    caFile: undefined,
    certFile: undefined,
    keyFile: undefined,
    prefix: "/p/",
    node: "n1",
    timeoutMs: 600,
    endpointTimeoutMs: 200,
    ...extra,
  });
  const read = (c: EtcdClient) => c.range({ key: "/x" });

  test("a refused or leaderless endpoint is followed by the next; every request asks for a leader", async () => {
    const down = deadEndpoint();
    const leaderless = fake();
    leaderless.mode = "no-leader";
    const good = fake();
    good.put("/x", "1");
    expect((await read(new EtcdClient(etcdConf([down, leaderless.endpoint, good.endpoint])))).kvs.map((kv) => kv.value)).toEqual(["1"]);
    expect(leaderless.requests.length).toBe(1);
    expect(good.requests[0]!.headers.get("grpc-metadata-hasleader")).toBe("true");
  });

  test("no endpoint with a quorum before the deadline: code 11 naming each endpoint and its cause", async () => {
    const down = deadEndpoint();
    const leaderless = fake();
    leaderless.mode = "no-leader";
    const err = await failure(read(new EtcdClient(etcdConf([down, leaderless.endpoint]))));
    expect(err.code).toBe(11);
    expect(err.msg).toContain(`${down}: connection refused`);
    expect(err.msg).toContain(`${leaderless.endpoint}: etcdserver: no leader`);
    expect(leaderless.requests.length).toBeGreaterThan(1); // tried again until the deadline
  });

  test("a member that does not answer: code 11; a write's outcome is then unknown, a read's does not matter", async () => {
    const slow = fake();
    slow.mode = "hang";
    const reader = new EtcdClient(etcdConf([slow.endpoint]));
    expect((await failure(read(reader))).msg).toMatch(new RegExp(`${slow.endpoint}: no answer within \\d+ ms$`));
    expect(reader.writeMayHaveApplied()).toBe(false);
    const writer = new EtcdClient(etcdConf([slow.endpoint]));
    expect((await failure(writer.txn({ compare: [], success: [{ put: { key: "/x", value: "1" } }] }))).code).toBe(11);
    expect(writer.writeMayHaveApplied()).toBe(true);
    const refused = new EtcdClient(etcdConf([deadEndpoint()]));
    await failure(refused.txn({ compare: [], success: [{ put: { key: "/x", value: "1" } }] }));
    expect(refused.writeMayHaveApplied()).toBe(false);
  });

  test("something that is not etcd, or refuses our identity: code 7 naming the endpoint; a usable one is still used", async () => {
    const web = fake();
    web.mode = "not-etcd";
    const err = await failure(read(new EtcdClient(etcdConf([web.endpoint]))));
    expect(err).toEqual({ code: 7, msg: `etcd.endpoints: no endpoint is usable: ${web.endpoint}: answered HTTP 200 "<html>It works!</html>", not etcd's v3 API (is this an etcd client URL, and etcd 3.4 or later?)` });
    const denied = fake();
    denied.mode = "permission-denied";
    expect((await failure(read(new EtcdClient(etcdConf([denied.endpoint]))))).msg).toContain("etcd.certFile");
    const good = fake();
    expect((await read(new EtcdClient(etcdConf([web.endpoint, denied.endpoint, good.endpoint])))).kvs).toEqual([]);
  });

  test("connections are reused across calls of one process, and an aborted request keeps none", async () => {
    /** This network namespace's established TCP connections to `endpoint` (client side). */
    const connections = (endpoint: string) => {
      const port = `:${Number(new URL(endpoint).port).toString(16).toUpperCase().padStart(4, "0")}`;
      return readFileSync("/proc/self/net/tcp", "utf8").split("\n").slice(1).map((l) => l.trim().split(/\s+/)).filter((f) => f[2]?.endsWith(port) && f[3] === "01").length;
    };
    const f = fake();
    for (let i = 0; i < 20; i++) await new EtcdClient(etcdConf([f.endpoint])).txn({ compare: [], success: [{ put: { key: `/k${i}`, value: "v" } }] });
    expect(connections(f.endpoint)).toBe(1);
    f.mode = "hang";
    await failure(read(new EtcdClient(etcdConf([f.endpoint]))));
    await Bun.sleep(50);
    expect(connections(f.endpoint)).toBe(0);
  });

  test("an error etcd gives for the request itself is code 999", async () => {
    const f = fake();
    f.mode = "invalid-argument";
    expect(await failure(read(new EtcdClient(etcdConf([f.endpoint]))))).toEqual({ code: 999, msg: `etcd at ${f.endpoint}: etcdserver: too many operations in txn request` });
  });

  test("TLS files that cannot be read or hold no PEM block are code 7 naming the field, before any request", () => {
    const notPem = join(dir, "not.pem");
    writeFileSync(notPem, "hello");
    const err = (extra: Partial<EtcdConfig>) => {
      try {
        new EtcdClient(etcdConf(["https://127.0.0.1:1"], extra));
      } catch (e) {
        return toErrorJson(e);
      }
      return undefined;
    };
    expect(err({ caFile: join(dir, "none.pem") })).toEqual({ code: 7, msg: `invalid etcd.caFile: open ${join(dir, "none.pem")}: no such file or directory` });
    expect(err({ caFile: notPem })).toEqual({ code: 7, msg: `invalid etcd.caFile ${notPem}: no PEM certificate in it` });
    expect(err({ certFile: notPem, keyFile: notPem })).toEqual({ code: 7, msg: `invalid etcd.certFile ${notPem}: no PEM certificate in it` });
  });
});

describe("allocation, DEL, CHECK, GC and STATUS", () => {
  test("round robin from the hint, one transaction per ADD, an ADD again returns the same address", async () => {
    const f = fake();
    const c = conf([f.endpoint], { ranges: [[{ subnet: "10.1.0.0/29", exclude: ["10.1.0.3"] }], [{ subnet: "fd00::/125" }]] });
    expect(addresses(await add(c, "a"))).toEqual(["10.1.0.2/29", "fd00::2/125"]);
    const asked = f.requests.length;
    expect(addresses(await add(c, "b"))).toEqual(["10.1.0.4/29", "fd00::3/125"]);
    expect(f.requests.length - asked).toBe(2); // a read (owner record, hints), one write
    const before = f.revision;
    expect(addresses(await add(c, "a"))).toEqual(["10.1.0.2/29", "fd00::2/125"]);
    expect(f.revision).toBe(before);
    expect(f.dump("/cni/ipam/net1/")).toEqual({
      "/cni/ipam/net1/ips/10.1.0.2": '{"containerID":"a","ifname":"eth0","node":"n1"}',
      "/cni/ipam/net1/ips/10.1.0.4": '{"containerID":"b","ifname":"eth0","node":"n1"}',
      "/cni/ipam/net1/ips/fd00::2": '{"containerID":"a","ifname":"eth0","node":"n1"}',
      "/cni/ipam/net1/ips/fd00::3": '{"containerID":"b","ifname":"eth0","node":"n1"}',
      "/cni/ipam/net1/last_reserved_ip.0": "10.1.0.4",
      "/cni/ipam/net1/last_reserved_ip.1": "fd00::3",
      "/cni/ipam/net1/owners/a/eth0": '{"containerID":"a","ifname":"eth0","node":"n1","ips":["10.1.0.2","fd00::2"]}',
      "/cni/ipam/net1/owners/b/eth0": '{"containerID":"b","ifname":"eth0","node":"n1","ips":["10.1.0.4","fd00::3"]}',
    });
  });

  test("addresses taken by other nodes are skipped; a lost race takes the next candidate", async () => {
    const f = fake();
    const c = conf([f.endpoint]);
    for (const ip of ["10.1.0.2", "10.1.0.3"]) f.put(`/cni/ipam/net1/ips/${ip}`, '{"containerID":"x","ifname":"eth0","node":"other"}');
    expect(addresses(await add(c, "a"))).toEqual(["10.1.0.4/29"]);
    // 20 ADDs at once, in one process, on a /27: all different.
    const wide = conf([f.endpoint], { ranges: [[{ subnet: "10.9.0.0/27" }]] });
    const got = await Promise.all(Array.from({ length: 20 }, (_, i) => add(wide, `r${i}`)));
    const ips = got.flatMap(addresses);
    expect(new Set(ips).size).toBe(20);
  });

  test("requested addresses; exhaustion; a held address that no longer fits", async () => {
    const f = fake();
    const c = conf([f.endpoint]);
    expect(addresses(await add(c, "a", { args: "IP=10.1.0.6" }))).toEqual(["10.1.0.6/29"]);
    expect(await failure(add(c, "b", { args: "IP=10.1.0.6" }))).toEqual({ code: 999, msg: "failed to allocate for range 0: requested IP address 10.1.0.6 is not available in range set 10.1.0.1-10.1.0.6" });
    expect(await failure(add(c, "b", { args: "IP=10.1.0.1" }))).toEqual({ code: 999, msg: "failed to allocate for range 0: requested ip 10.1.0.1 is subnet's gateway" });
    for (const id of ["b", "c", "d", "e"]) await add(c, id);
    expect(await failure(add(c, "f"))).toEqual({ code: 999, msg: "failed to allocate for range 0: no IP addresses available in range set: 10.1.0.1-10.1.0.6" });
    expect(await failure(clusterLocalPlugin.status!(args(c)) as Promise<void>)).toEqual({ code: 50, msg: "no IP addresses available in range set: 10.1.0.1-10.1.0.6" });
    const other = conf([f.endpoint], { ranges: [[{ subnet: "10.7.0.0/29" }]] });
    expect((await failure(add(other, "a"))).msg).toBe("a/eth0 already holds 10.1.0.6, which has no address in range set 0; DEL the attachment before adding it again");
    expect((await failure(add(c, "zz", { args: "IP=10.8.0.1" }))).msg).toBe("failed to allocate all requested IPs: 10.8.0.1");
  });

  test("DEL releases only what the attachment holds, and only while it is still its reservation; CHECK", async () => {
    const f = fake();
    const c = conf([f.endpoint]);
    await add(c, "a");
    await add(c, "b");
    await clusterLocalPlugin.check!(args(c, "a", { command: "CHECK" }));
    // a's address was released behind its back and taken by another: DEL removes a's owner
    // record, not that address.
    f.data.delete("/cni/ipam/net1/ips/10.1.0.2");
    f.put("/cni/ipam/net1/ips/10.1.0.2", '{"containerID":"x","ifname":"eth0","node":"n2"}');
    expect((await failure(clusterLocalPlugin.check!(args(c, "a", { command: "CHECK" })) as Promise<void>)).msg).toContain("is recorded as holding 10.1.0.2, but that reservation is gone or someone else's");
    await clusterLocalPlugin.del(args(c, "a", { command: "DEL" }));
    await clusterLocalPlugin.del(args(c, "a", { command: "DEL" }));
    expect(Object.keys(f.dump("/cni/ipam/net1/ips/"))).toEqual(["/cni/ipam/net1/ips/10.1.0.2", "/cni/ipam/net1/ips/10.1.0.3"]);
    expect(Object.keys(f.dump("/cni/ipam/net1/owners/"))).toEqual(["/cni/ipam/net1/owners/b/eth0"]);
    expect((await failure(clusterLocalPlugin.check!(args(c, "a", { command: "CHECK" })) as Promise<void>)).msg).toBe("cluster-local: Failed to find address added by container a");
  });

  test("GC releases this node's stale reservations and orphans, never another node's", async () => {
    const f = fake();
    const n1 = conf([f.endpoint]);
    const n2 = conf([f.endpoint], {}, { node: "n2" });
    await add(n1, "a");
    await add(n1, "b");
    await add(n2, "c");
    f.put("/cni/ipam/net1/ips/10.1.0.6", '{"containerID":"lost","ifname":"eth0","node":"n1"}');
    f.put("/cni/ipam/net1/ips/10.1.0.5", '{"containerID":"lost","ifname":"eth0","node":"n2"}');
    await clusterLocalPlugin.gc!(args(n1, "", { command: "GC" }));
    expect(Object.keys(f.dump("/cni/ipam/net1/owners/")).length).toBe(3); // no valid-attachments key: nothing
    await clusterLocalPlugin.gc!(args({ ...n1, "cni.dev/valid-attachments": [{ containerID: "a", ifname: "eth0" }] }, "", { command: "GC" }));
    expect(Object.keys(f.dump("/cni/ipam/net1/owners/"))).toEqual(["/cni/ipam/net1/owners/a/eth0", "/cni/ipam/net1/owners/c/eth0"]);
    expect(Object.keys(f.dump("/cni/ipam/net1/ips/"))).toEqual(["/cni/ipam/net1/ips/10.1.0.2", "/cni/ipam/net1/ips/10.1.0.4", "/cni/ipam/net1/ips/10.1.0.5"]);
  });

  test("STATUS: 50 when etcd cannot be reached, 7 when TLS is wrong, fine otherwise", async () => {
    const f = fake();
    await clusterLocalPlugin.status!(args(conf([f.endpoint])));
    const down = conf([deadEndpoint()], {}, { timeout: "300ms" });
    const err = await failure(clusterLocalPlugin.status!(args(down)) as Promise<void>);
    expect(err.code).toBe(50);
    expect(err.msg).toContain("connection refused");
    expect(await failure(clusterLocalPlugin.status!(args(conf(["https://127.0.0.1:1"], {}, { caFile: join(dir, "missing") }))) as Promise<void>)).toEqual({
      code: 7,
      msg: `invalid etcd.caFile: open ${join(dir, "missing")}: no such file or directory`,
    });
  });
});
