/**
 * The scenarios of `make bench`. Each runs in its own throwaway host network namespace (run.ts
 * starts it as a worker under `unshare -n`), alternates ours and Go for `rounds` rounds (ABBA
 * order, see stats.ts) and returns its raw samples; run.ts turns them into the final table.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { staticBusybox, staticBusyboxTag } from "../harness/busybox.ts";
import { ensureSandboxImage, startContainerd, type Containerd } from "../harness/containerd.ts";
import { EtcdCluster } from "../harness/etcd-cluster.ts";
import { RC_CRICTL } from "../e2e/lib/tools.ts";
import { burst } from "./burst.ts";
import { kubeProxyTables } from "./kube-table.ts";
import { livePods } from "./live-pods.ts";
import {
  addNetnsBatch,
  BANDWIDTH,
  call,
  chainAdd,
  chainDel,
  ContainerNetns,
  delNetnsBatch,
  leftoverReservations,
  dirOf,
  FIREWALL,
  log,
  NO_AGENT_SOCKET,
  normalisePageCache,
  portmap,
  sh,
  TUNING,
  waitUntilListening,
  wallNow,
  type CallEnv,
  type ChainPlugin,
  type Impl,
  IMPLS,
  CNI_VERSION,
} from "./lib.ts";
import { processRssMiB, processThreads } from "./proc.ts";
import { BASE_PATH, env, push, socketOf, type Samples, type Scenario, type ScenarioContext, type Series } from "./scenario.ts";
import { alternation } from "./stats.ts";

function hostLocal(ctx: ScenarioContext, impl: Impl, subnet: string): Record<string, unknown> {
  return { type: "host-local", subnet, dataDir: join(ctx.state, `ipam-${impl}`) };
}

function bridge(ctx: ScenarioContext, impl: Impl, opts: { ipMasq: boolean; nftables?: boolean; bridge?: string }): ChainPlugin {
  const conf: Record<string, unknown> = {
    bridge: opts.bridge ?? "cnibench0",
    isGateway: true,
    ipMasq: opts.ipMasq,
    ipam: hostLocal(ctx, impl, "10.88.0.0/16"),
  };
  if (opts.nftables) conf.ipMasqBackend = "nftables";
  return { type: "bridge", conf };
}

const PORTMAP = portmap(18080);

function withNftables(p: ChainPlugin): ChainPlugin {
  return { type: p.type, conf: { ...p.conf, backend: "nftables" } };
}

/** Times a chain's ADD and DEL per round, each round in a fresh container netns. */
function chainRounds(
  ctx: ScenarioContext,
  tag: string,
  plugins: (impl: Impl) => ChainPlugin[],
  extraEnv: Partial<CallEnv> = {},
  warmup = 1,
): Samples {
  const s: Samples = {};
  for (let round = -warmup; round < ctx.rounds; round++) {
    for (const impl of alternation(IMPLS, round)) {
      const ns = new ContainerNetns(`${tag}-${impl}-${round + warmup}`);
      try {
        const e = env(ctx, impl, `${tag}-${round + warmup}`, ns.path, extraEnv);
        const chain = plugins(impl);
        const add = chainAdd(dirOf(ctx.dirs, impl), `${tag}-net`, chain, e);
        const del = chainDel(dirOf(ctx.dirs, impl), `${tag}-net`, chain, e, add.result);
        if (round >= 0) {
          push(s, "add", impl, add.ms);
          push(s, "del", impl, del);
        }
      } finally {
        ns.remove();
      }
    }
  }
  return s;
}

/** VERSION of each implementation next to a compiled Bun hello-world, in alternation. */
const version: Scenario = (ctx) => {
  const s: Samples = {};
  for (let round = -3; round < ctx.rounds * 4; round++) {
    for (const impl of alternation([...IMPLS, "hello"] as const, round)) {
      const e = { CNI_CONTAINERID: "", CNI_NETNS: "", CNI_IFNAME: "", CNI_PATH: "" };
      const ms =
        impl === "hello"
          ? timeRun([ctx.hello], 0)
          : call(dirOf(ctx.dirs, impl), "bridge", "VERSION", { ...e, CNI_PLUGINS_SOCKET: socketOf(ctx, impl) }, `{"cniVersion":"${CNI_VERSION}"}`).ms;
      if (round >= 0) push(s, "version", impl, ms);
    }
  }
  return { samples: s };
};

/** Times a process from spawn to reaped; it must exit with `status`. */
function timeRun(argv: string[], status: number): number {
  const t0 = wallNow();
  const r = Bun.spawnSync({ cmd: argv, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const ms = wallNow() - t0;
  if (r.exitCode !== status) throw new Error(`${argv[0]} exited ${r.exitCode}, not ${status}`);
  return ms;
}

/**
 * The exec shim on its own: its start-to-exit under its own name (it prints its usage and exits 2:
 * no connection, no exec), next to the compiled Bun hello-world and to the floor of any spawn
 * timed this way, a static executable that does nothing (busybox-static's `true`): what the shim
 * costs of its own is the difference.
 */
const shim: Scenario = (ctx) => {
  const s: Samples = {};
  const file = join(ctx.dirs.ours, "cni-plugins-shim");
  const floor = [staticBusybox(), "true"];
  for (let round = -3; round < ctx.rounds * 4; round++) {
    for (const series of alternation(["resident", "hello", "floor"] as const, round)) {
      const ms = series === "hello" ? timeRun([ctx.hello], 0) : series === "floor" ? timeRun(floor, 0) : timeRun([file], 2);
      if (round >= 0) push(s, "alone", series, ms);
    }
  }
  return { samples: s };
};

const loopback: Scenario = (ctx) => {
  const s: Samples = {};
  const ns = new ContainerNetns("lo-bench");
  try {
    for (let round = -1; round < ctx.rounds * 2; round++) {
      for (const impl of alternation(IMPLS, round)) {
        const e = env(ctx, impl, `lo-${round}`, ns.path, { CNI_IFNAME: "lo" });
        const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "lo-bench", type: "loopback" });
        const add = call(dirOf(ctx.dirs, impl), "loopback", "ADD", e, conf).ms;
        call(dirOf(ctx.dirs, impl), "loopback", "DEL", e, conf);
        if (round >= 0) push(s, "add", impl, add);
      }
    }
  } finally {
    ns.remove();
  }
  return { samples: s };
};

/**
 * What pinning Bun's baseline runtime costs per call: the executable as built (`direct`) next to the
 * same sources on Bun's default x64 runtime (`avx2`, run.ts builds it), both called directly under
 * the plugin's name, alternating: VERSION, and loopback ADD in a fresh namespace.
 */
const runtime: Scenario = (ctx) => {
  const s: Samples = {};
  const ns = new ContainerNetns("rt-bench");
  const dirs = { direct: ctx.dirs.direct, avx2: ctx.dirs.avx2 } as const;
  try {
    for (let round = -2; round < ctx.rounds * 3; round++) {
      for (const series of alternation(["direct", "avx2"] as const, round)) {
        const version = call(dirs[series], "bridge", "VERSION", { CNI_CONTAINERID: "", CNI_NETNS: "", CNI_IFNAME: "", CNI_PATH: "" }, `{"cniVersion":"${CNI_VERSION}"}`).ms;
        const e = env(ctx, "direct", `rt-${round}`, ns.path, { CNI_IFNAME: "lo" });
        const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "rt-bench", type: "loopback" });
        const add = call(dirs[series], "loopback", "ADD", e, conf).ms;
        call(dirs[series], "loopback", "DEL", e, conf);
        if (round >= 0) {
          push(s, "version", series, version);
          push(s, "loopback add", series, add);
        }
      }
    }
  } finally {
    ns.remove();
  }
  return { samples: s };
};

const bridgeHostLocal: Scenario = (ctx) => ({
  samples: chainRounds(ctx, "br", (impl) => [bridge(ctx, impl, { ipMasq: false })], {}, 2),
});

/**
 * bridge + cluster-local ADD and DEL on a three-member etcd cluster on loopback, next to bridge +
 * host-local, both ours, standalone and resident (the metrics "add standalone", "add resident", …;
 * the series: "standalone"/"resident" for cluster-local, "host-local" for host-local in the same
 * mode), in alternation, each call in a fresh container netns.
 */
const clusterLocal: Scenario = async (ctx) => {
  const cluster = await EtcdCluster.start({ basePort: 26790, normalPriority: true });
  try {
    const s: Samples = {};
    const ipams = {
      "host-local": { type: "host-local", subnet: "10.90.0.0/16", dataDir: join(ctx.state, "ipam-cl-ref") },
      "cluster-local": { type: "cluster-local", subnet: "10.90.0.0/16", etcd: cluster.etcdConfig({ node: "bench" }) },
    } as const;
    const runs = [
      ["standalone", "cluster-local"],
      ["standalone", "host-local"],
      ["resident", "cluster-local"],
      ["resident", "host-local"],
    ] as const;
    for (let round = -2; round < ctx.rounds; round++) {
      for (const [mode, ipam] of alternation(runs, round)) {
        const ns = new ContainerNetns(`cl-${mode[0]}-${ipam[0]}-${round + 2}`);
        try {
          const e = env(ctx, mode, `cl-${round + 2}`, ns.path);
          const chain: ChainPlugin[] = [{ type: "bridge", conf: { bridge: "cnibench2", isGateway: true, ipMasq: false, ipam: ipams[ipam] } }];
          const add = chainAdd(ctx.dirs.ours, "cl-net", chain, e);
          const del = chainDel(ctx.dirs.ours, "cl-net", chain, e, add.result);
          if (round >= 0) {
            const series = ipam === "host-local" ? "host-local" : mode;
            push(s, `add ${mode}`, series, add.ms);
            push(s, `del ${mode}`, series, del);
          }
        } finally {
          ns.remove();
        }
      }
    }
    const left = await cluster.keys("/cni/ipam/cl-net/owners/");
    const check = { ok: left.length === 0, text: "no reservation left after DEL" };
    return {
      samples: s,
      checks: { "add standalone": check, "add resident": check },
      ...(left.length === 0 ? {} : { report: [`cluster-local: ${left.length} reservations left after DEL`] }),
    };
  } finally {
    await cluster.stop();
  }
};

/** bridge(ipMasq) → portmap → firewall → tuning → bandwidth on a node without other rules. */
const chain5: Scenario = (ctx) => ({
  samples: chainRounds(ctx, "c5", (impl) => [bridge(ctx, impl, { ipMasq: true }), PORTMAP, FIREWALL, TUNING, BANDWIDTH]),
});

/** N simultaneous bridge+host-local ADDs, then N simultaneous DELs. */
const CONCURRENT = 50;
const concurrent: Scenario = async (ctx) => {
  const s: Samples = {};
  const problems: string[] = [];
  for (let round = 0; round < ctx.rounds; round++) {
    for (const impl of alternation(IMPLS, round)) {
      const names = Array.from({ length: CONCURRENT }, (_, i) => `cc-${impl}-${round}-${i}`);
      addNetnsBatch(names);
      try {
        const conf = () =>
          JSON.stringify({ cniVersion: CNI_VERSION, name: "cc-net", type: "bridge", ...bridge(ctx, impl, { ipMasq: false, bridge: "cnibench1" }).conf });
        const run = async (command: string) => {
          const t0 = wallNow();
          const outs = await Promise.all(
            names.map(async (n) => {
              const p = Bun.spawn({
                cmd: [join(dirOf(ctx.dirs, impl), "bridge")],
                env: { ...env(ctx, impl, n, `/run/netns/${n}`), CNI_COMMAND: command } as Record<string, string>,
                stdin: Buffer.from(conf()),
                stdout: "pipe",
                stderr: "pipe",
              });
              const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
              return { out, code };
            }),
          );
          return { ms: wallNow() - t0, outs };
        };
        const addRun = await run("ADD");
        const failed = addRun.outs.filter((o) => o.code !== 0);
        const ips = addRun.outs.flatMap((o) => (o.code === 0 ? ((JSON.parse(o.out) as { ips?: { address: string }[] }).ips ?? []).map((x) => x.address) : []));
        const unique = new Set(ips).size;
        if (failed.length > 0) problems.push(`${impl} round ${round}: ${failed.length} ADDs failed: ${failed[0]!.out.slice(0, 200)}`);
        if (unique !== ips.length || ips.length !== CONCURRENT - failed.length) {
          problems.push(`${impl} round ${round}: ${ips.length} addresses, ${unique} distinct`);
        }
        const delRun = await run("DEL");
        const delFailed = delRun.outs.filter((o) => o.code !== 0).length;
        if (delFailed > 0) problems.push(`${impl} round ${round}: ${delFailed} DELs failed`);
        const left = leftoverReservations(join(ctx.state, `ipam-${impl}`, "cc-net"));
        if (left > 0) problems.push(`${impl} round ${round}: ${left} reservations left after DEL`);
        push(s, "add", impl, addRun.ms);
        push(s, "del", impl, delRun.ms);
      } finally {
        delNetnsBatch(names);
      }
    }
  }
  const text = `${CONCURRENT}/${CONCURRENT} ok, no duplicate, none leaked`;
  return {
    samples: s,
    checks: { add: { ok: problems.length === 0, text } },
    report: problems.map((p) => `concurrent: ${p}`),
  };
};

const RESERVATION_BASE = (10 << 24) | (128 << 16);
const ipText = (v: number) => `${v >>> 24}.${(v >> 16) & 255}.${(v >> 8) & 255}.${v & 255}`;

/** The address host-local hands out from 10.128.0.0/14 when its first `n` are taken (.1 is the gateway). */
function firstFreeAfter(n: number): string {
  return `${ipText(RESERVATION_BASE + 2 + n)}/14`;
}

/** The Go-format reservation files of `n` containers in 10.128.0.0/14, as a busy node has them. */
function fillReservations(dir: string, n: number): void {
  mkdirSync(dir, { recursive: true });
  let last = "";
  for (let i = 0; i < n; i++) {
    last = ipText(RESERVATION_BASE + 2 + i);
    writeFileSync(join(dir, last), `existing-${i}\r\neth0`, { mode: 0o600 });
  }
  writeFileSync(join(dir, "last_reserved_ip.0"), last, { mode: 0o600 });
}

/** host-local ADD (timed) and DEL (not timed) with `n` other reservations in the store. */
function hostLocalWith(n: number): Scenario {
  return (ctx) => {
    const s: Samples = {};
    for (const impl of IMPLS) fillReservations(join(ctx.state, `hl-${impl}`, "hl-net"), n);
    const ns = new ContainerNetns("hl-bench");
    try {
      for (let round = -1; round < ctx.rounds; round++) {
        for (const impl of alternation(IMPLS, round)) {
          const e = env(ctx, impl, `hl-${round}`, ns.path);
          const conf = JSON.stringify({
            cniVersion: CNI_VERSION,
            name: "hl-net",
            type: "host-local",
            ipam: { type: "host-local", subnet: "10.128.0.0/14", dataDir: join(ctx.state, `hl-${impl}`) },
          });
          const add = call(dirOf(ctx.dirs, impl), "host-local", "ADD", e, conf).ms;
          call(dirOf(ctx.dirs, impl), "host-local", "DEL", e, conf);
          if (round >= 0) push(s, "add", impl, add);
        }
      }
    } finally {
      ns.remove();
    }
    return { samples: s };
  };
}

/**
 * host-local ADD (timed) when the range's first `n` addresses are taken and no
 * `last_reserved_ip.0` exists (removed before every round, as after a node's cleanup or with a
 * range set new to the store): the allocator walks from the range start past every taken
 * address. The DEL after it is timed as well: after a change by another writer (here the bench),
 * it is the call of ours that verifies the store exactly (docs/performance.md).
 */
function hostLocalTaken(n: number): Scenario {
  return (ctx) => {
    const s: Samples = {};
    const dataDir = (impl: Impl) => join(ctx.state, `hlt-${impl}`);
    for (const impl of IMPLS) fillReservations(join(dataDir(impl), "hlt-net"), n);
    // A busy node's reservations are old. Ours trusts a file's recorded (inode, ctime, size) only
    // when the file was more than 2 s old when it was read (ipam/host-local/store/disk.ts), so files
    // written a moment ago would be read again by every verification of the rounds below.
    Bun.sleepSync(2500);
    const ns = new ContainerNetns("hlt-bench");
    try {
      for (let round = -1; round < ctx.rounds; round++) {
        for (const impl of alternation(IMPLS, round)) {
          rmSync(join(dataDir(impl), "hlt-net", "last_reserved_ip.0"), { force: true });
          const e = env(ctx, impl, `hlt-${round}`, ns.path);
          const conf = JSON.stringify({
            cniVersion: CNI_VERSION,
            name: "hlt-net",
            type: "host-local",
            ipam: { type: "host-local", subnet: "10.128.0.0/14", dataDir: dataDir(impl) },
          });
          const add = call(dirOf(ctx.dirs, impl), "host-local", "ADD", e, conf);
          const got = (JSON.parse(add.stdout) as { ips?: { address: string }[] }).ips?.[0]?.address;
          if (got !== firstFreeAfter(n)) throw new Error(`${impl} allocated ${got}, want ${firstFreeAfter(n)}`);
          const del = call(dirOf(ctx.dirs, impl), "host-local", "DEL", e, conf).ms;
          if (round >= 0) {
            push(s, "add", impl, add.ms);
            push(s, "del", impl, del);
          }
        }
      }
    } finally {
      ns.remove();
    }
    return { samples: s };
  };
}

type IptablesVariant = "nft" | "legacy";

/**
 * Fills this (throwaway) host netns with the kube-proxy-sized tables using `variant`'s tools. For
 * legacy, returns a PATH whose `iptables*` are the legacy tools, so the Go plugins (which run plain
 * `iptables`) use the variant that holds the node's rules, as they would on such a node; the host's
 * alternatives are never touched.
 */
function kubeNode(ctx: ScenarioContext, variant: IptablesVariant): string {
  sh([`iptables-${variant}-restore`], kubeProxyTables());
  const count = sh([`iptables-${variant}-save`, "-t", "nat"]).split("\n").filter((l) => l.startsWith("-A")).length;
  if (count < 20_000) throw new Error(`kube-proxy table holds ${count} rules, want 20,000`);
  log(`kube-proxy-sized nat table (${count} rules) loaded with iptables-${variant}`);
  if (variant === "nft") return BASE_PATH;
  const bin = join(ctx.state, "legacy-bin");
  mkdirSync(bin, { recursive: true });
  for (const fam of ["iptables", "ip6tables"]) {
    for (const suffix of ["", "-save", "-restore"]) symlinkSync(`/usr/sbin/${fam}-legacy${suffix}`, join(bin, `${fam}${suffix}`));
  }
  return `${bin}:${BASE_PATH}`;
}

function kube(variant: IptablesVariant, oursNftables: boolean): Scenario {
  return (ctx) => {
    const path = kubeNode(ctx, variant);
    const plugins = (impl: Impl): ChainPlugin[] => {
      const nft = impl !== "go" && oursNftables;
      return [bridge(ctx, impl, { ipMasq: true, nftables: nft }), nft ? withNftables(PORTMAP) : PORTMAP, nft ? withNftables(FIREWALL) : FIREWALL];
    };
    return { samples: chainRounds(ctx, `k${variant[0]}${oursNftables ? "n" : ""}`, plugins, { PATH: path }) };
  };
}

interface MemSample {
  status: number;
  hwm_kb: number;
  anon_kb: number;
}

/** Runs one call under test/bench/memprobe.py; returns its memory and stdout. */
function probe(file: string, envVars: Record<string, string>, stdin: string, scratch: string): { mem: MemSample; stdout: string } {
  const inFile = join(scratch, "probe-in");
  const outFile = join(scratch, "probe-out");
  writeFileSync(inFile, stdin);
  const r = Bun.spawnSync({
    cmd: ["python3", join(import.meta.dir, "memprobe.py"), inFile, outFile, file],
    env: envVars,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`memprobe ${file}: ${r.stderr.toString()}`);
  const mem = JSON.parse(r.stdout.toString()) as MemSample;
  const stdout = readFileSync(outFile, "utf8");
  if (mem.status !== 0) throw new Error(`${file} exited ${mem.status} under memprobe: ${stdout.slice(0, 300)}`);
  return { mem, stdout };
}

/**
 * Peak RSS (VmHWM) and private anonymous memory (RssAnon at exit) of each kind of call, ours and
 * Go, next to the hello-world floor.
 */
const memory: Scenario = (ctx) => {
  const s: Samples = {};
  const scratch = join(ctx.state, "mem");
  mkdirSync(scratch, { recursive: true });
  normalisePageCache([ctx.dirs.ours, ctx.dirs.go], [ctx.hello]);
  const record = (kind: string, impl: Series, m: MemSample) => {
    push(s, `peak ${kind}`, impl, m.hwm_kb / 1024);
    push(s, `anon ${kind}`, impl, m.anon_kb / 1024);
  };
  const rounds = Math.max(3, Math.ceil(ctx.rounds / 2));
  for (let round = 0; round < rounds; round++) {
    record("hello-world", "hello", probe(ctx.hello, {}, "", scratch).mem);
    for (const impl of alternation(IMPLS, round)) {
      const dir = dirOf(ctx.dirs, impl);
      const base = (id: string, netns: string, command: string, ifname = "eth0") => ({
        ...(env(ctx, impl, id, netns, { CNI_IFNAME: ifname }) as unknown as Record<string, string>),
        CNI_COMMAND: command,
      });
      const version = { CNI_COMMAND: "VERSION", PATH: BASE_PATH, CNI_PLUGINS_SOCKET: socketOf(ctx, impl) };
      record("VERSION", impl, probe(join(dir, "bridge"), version, `{"cniVersion":"${CNI_VERSION}"}`, scratch).mem);
      const ns = new ContainerNetns(`mem-${impl}-${round}`);
      try {
        const lo = JSON.stringify({ cniVersion: CNI_VERSION, name: "mem-lo", type: "loopback" });
        record("loopback ADD", impl, probe(join(dir, "loopback"), base(`m${round}`, ns.path, "ADD", "lo"), lo, scratch).mem);
        const hl = JSON.stringify({ cniVersion: CNI_VERSION, name: "mem-hl", type: "host-local", ipam: hostLocal(ctx, impl, "10.89.0.0/16") });
        record("host-local ADD", impl, probe(join(dir, "host-local"), base(`m${round}`, ns.path, "ADD"), hl, scratch).mem);
        probe(join(dir, "host-local"), base(`m${round}`, ns.path, "DEL"), hl, scratch);
        // The 5-plugin chain, every call under the probe (results passed along as libcni does).
        const chain = [bridge(ctx, impl, { ipMasq: true }), PORTMAP, FIREWALL, TUNING, BANDWIDTH];
        const label = (p: ChainPlugin) => (p.type === "bridge" ? "bridge(ipMasq)+host-local" : p.type);
        let result: unknown;
        for (const p of chain) {
          const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "mem-net", type: p.type, ...p.conf, ...(result ? { prevResult: result } : {}) });
          const r = probe(join(dir, p.type), base(`m${round}`, ns.path, "ADD"), conf, scratch);
          record(`${label(p)} ADD`, impl, r.mem);
          result = JSON.parse(r.stdout);
        }
        for (const p of [...chain].reverse()) {
          const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "mem-net", type: p.type, ...p.conf, prevResult: result });
          const r = probe(join(dir, p.type), base(`m${round}`, ns.path, "DEL"), conf, scratch);
          if (p.type === "bridge") record(`${label(p)} DEL`, impl, r.mem);
        }
      } finally {
        ns.remove();
      }
    }
  }
  // The agent that served the resident calls: its resident set now (one figure per round).
  push(s, "agent rss", "resident", processRssMiB(ctx.agent.pid));
  return { samples: s };
};

/**
 * The agent's memory over a long life: bridge(ipMasq)+host-local ADD/DEL pairs through it, in
 * STREAMS parallel streams each with its own container netns; its resident set after the first
 * 1,000 pairs and after 10,000 (one run; `rounds` does not apply), each read once the agent has been
 * idle for SETTLE_MS (its threads collect their garbage when idle: agent/idle-gc.ts), so the figures
 * compare what the agent keeps, not where its collector happened to be.
 */
const STREAMS = 4;
const SETTLE_MS = 3000;
const agentMemory: Scenario = async (ctx) => {
  const s: Samples = {};
  const names = Array.from({ length: STREAMS }, (_, i) => `am-${i}`);
  addNetnsBatch(names);
  try {
    const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "am-net", type: "bridge", ...bridge(ctx, "resident", { ipMasq: true, bridge: "cnibench3" }).conf });
    const pair = async (stream: number, n: number) => {
      for (const command of ["ADD", "DEL"]) {
        const p = Bun.spawn({
          cmd: [join(ctx.dirs.ours, "bridge")],
          env: { ...env(ctx, "resident", `am-${stream}-${n}`, `/run/netns/${names[stream]}`), CNI_COMMAND: command } as Record<string, string>,
          stdin: Buffer.from(conf),
          stdout: "pipe",
          stderr: "pipe",
        });
        const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
        if (code !== 0) throw new Error(`agent-memory: ${command} ${stream}/${n} exited ${code}: ${out.slice(0, 300)}`);
      }
    };
    const runPairs = async (from: number, to: number) => {
      await Promise.all(
        names.map(async (_, stream) => {
          for (let n = from + stream; n < to; n += STREAMS) await pair(stream, n);
        }),
      );
    };
    const t0 = wallNow();
    await runPairs(0, 1000);
    await Bun.sleep(SETTLE_MS);
    const after1k = processRssMiB(ctx.agent.pid);
    log(`agent-memory: 1,000 pairs in ${((wallNow() - t0) / 1000).toFixed(1)} s, agent at ${after1k.toFixed(1)} MiB, ${processThreads(ctx.agent.pid)} threads`);
    await runPairs(1000, 10_000);
    await Bun.sleep(SETTLE_MS);
    const after10k = processRssMiB(ctx.agent.pid);
    log(`agent-memory: 10,000 pairs in ${((wallNow() - t0) / 1000).toFixed(1)} s, agent at ${after10k.toFixed(1)} MiB, ${processThreads(ctx.agent.pid)} threads`);
    push(s, "rss 1k", "resident", after1k);
    push(s, "rss 10k", "resident", after10k);
    const left = leftoverReservations(join(ctx.state, "ipam-resident", "am-net"));
    const grew = after10k / after1k - 1;
    return {
      samples: s,
      checks: {
        "rss 10k": { ok: grew <= 0.1 && left === 0, text: `within 10 % of the 1,000-pair figure (${(grew * 100).toFixed(1)} %), no reservation left` },
      },
    };
  } finally {
    delNetnsBatch(names);
  }
};

/**
 * A Kubernetes pod's network life through containerd's CRI: RunPodSandbox, StopPodSandbox and
 * RemovePodSandbox (rc-crictl), with bridge(ipMasq)+portmap+firewall+tuning, one private containerd
 * per implementation (its cni.bin_dir; for ours, CNI_PLUGINS_SOCKET in its environment, which
 * libcni passes to the plugins), cycles in alternation. The time is the three CRI calls' wall time
 * (the sandbox container's start and stop are in it, alike for all). containerd runs with the
 * normal scheduling policy (see startContainerd), so the plugin processes it starts do too, and so
 * does the agent this scenario starts for its resident series (with the flags it ships with, as
 * run.ts starts the other scenarios' agent).
 */
const cri: Scenario = async (ctx) => {
  if (!existsSync(RC_CRICTL)) throw new Error(`${RC_CRICTL} is missing (test/e2e/setup/prepare.sh builds it)`);
  const image = `localhost/cni-bench-pause:bb-${staticBusyboxTag()}`;
  const daemons = new Map<Impl, Containerd>();
  const agentSocket = join(ctx.state, "cri-agent", "plugins.sock");
  const agent = Bun.spawn(["chrt", "--other", "0", join(ctx.dirs.ours, "cni-plugins"), "serve", "--socket", agentSocket], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  try {
    await waitUntilListening(agentSocket);
    for (const [i, impl] of IMPLS.entries()) {
      const state = join(ctx.state, `cri-${impl}`);
      const confDir = join(state, "net.d");
      mkdirSync(confDir, { recursive: true });
      const conflist = {
        cniVersion: "1.0.0",
        name: `cri-${impl}`,
        plugins: [
          { type: "bridge", bridge: `cribench${i}`, isGateway: true, ipMasq: true, hairpinMode: true, ipam: { type: "host-local", ranges: [[{ subnet: `10.91.${i}.0/24` }]], routes: [{ dst: "0.0.0.0/0" }] } },
          { type: "portmap", capabilities: { portMappings: true } },
          { type: "firewall" },
          { type: "tuning" },
        ],
      };
      writeFileSync(join(confDir, "10-cri.conflist"), JSON.stringify(conflist));
      const d = await startContainerd({
        state,
        rundir: `/run/cni-bench-cri-${impl}`,
        binDir: dirOf(ctx.dirs, impl),
        confDir,
        sandboxImage: image,
        env: { CNI_PLUGINS_SOCKET: impl === "resident" ? agentSocket : NO_AGENT_SOCKET },
        normalPriority: true,
      });
      daemons.set(impl, d);
      const problem = await ensureSandboxImage(d, image, staticBusybox(), state);
      if (problem !== undefined) throw new Error(`cri ${impl}: ${problem}`);
    }
    const s: Samples = {};
    const crictl = async (impl: Impl, args: string[]) => {
      const r = await daemons.get(impl)!.crictl(RC_CRICTL, args);
      if (r.status !== 0) throw new Error(`cri ${impl}: rc-crictl ${args[0]} exited ${r.status}: ${r.stderr.trim().slice(0, 300)}`);
      return r;
    };
    for (let round = -1; round < ctx.rounds; round++) {
      for (const impl of alternation(IMPLS, round)) {
        const logdir = join(ctx.state, `cri-${impl}`, "logs");
        mkdirSync(logdir, { recursive: true });
        const t0 = wallNow();
        const runp = await crictl(impl, ["runp", "-name", `bench-${impl}-${round + 1}`, "-logdir", logdir]);
        const pod = runp.stdout.trim().split("\n").pop() ?? "";
        await crictl(impl, ["stopp", pod]);
        await crictl(impl, ["rmp", pod]);
        if (round >= 0) push(s, "cycle", impl, wallNow() - t0);
      }
    }
    return { samples: s };
  } finally {
    for (const d of daemons.values()) await d.stop();
    agent.kill("SIGTERM");
    await agent.exited;
  }
};

interface PhaseLine {
  origin: number;
  marks: [string, number][];
  spans: Record<string, [number, number]>;
}

/** The CNI_PHASES line a process printed on stderr. */
export function parsePhases(stderr: string): PhaseLine | undefined {
  const line = stderr.split("\n").find((l) => l.startsWith("CNI_PHASES "));
  return line === undefined ? undefined : (JSON.parse(line.slice("CNI_PHASES ".length)) as PhaseLine);
}

/** The phases of one timed call, in ms: from spawn to exit, each phase the time since the previous. */
export function phasesOf(p: PhaseLine, startedAt: number, endedAt: number): Record<string, number> {
  const at = (label: string) => {
    const m = p.marks.find(([l]) => l === label);
    if (m === undefined) throw new Error(`phase mark "${label}" missing`);
    return p.origin + m[1];
  };
  const span = (k: string) => p.spans[k]?.[0] ?? 0;
  const [entry, loaded, parsed, handled, written] = ["entry", "plugin loaded", "config parsed", "handler done", "result written"].map(at) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const ipam = span("delegate");
  const kernel = span("socket") + span("setns");
  return {
    "process start (exec to cli/dispatch.ts)": entry - startedAt,
    "plugin module load": loaded - entry,
    "stdin read and JSON parse": parsed - loaded,
    "IPAM (host-local, in process)": ipam,
    "netlink and setns": kernel,
    "firewall, sysctl and plugin logic": handled - parsed - ipam - kernel,
    "result (convert and write)": written - handled,
    "exit (to reaped)": endedAt - written,
    "total": endedAt - startedAt,
    "  of which: config decode (all decodes)": span("decode"),
    "  of which: libc binding (dlopen)": span("dlopen"),
  };
}

/** A bridge(ipMasq)+host-local ADD of ours with the phase timer on, per phase (medians in run.ts). */
const phases: Scenario = (ctx) => {
  const s: Samples = {};
  for (let round = -1; round < ctx.rounds; round++) {
    for (const ipMasq of [true, false]) {
      const ns = new ContainerNetns(`ph-${round + 1}-${ipMasq ? "m" : "p"}`);
      try {
        const e = env(ctx, "standalone", `ph-${round + 1}`, ns.path, { CNI_PHASES: "1" });
        const b = bridge(ctx, "standalone", { ipMasq });
        const conf = JSON.stringify({ cniVersion: CNI_VERSION, name: "ph-net", type: "bridge", ...b.conf });
        const add = call(ctx.dirs.ours, "bridge", "ADD", e, conf);
        call(ctx.dirs.ours, "bridge", "DEL", e, conf);
        if (round < 0) continue;
        if (!ipMasq) {
          push(s, "bridge+host-local ADD without ipMasq: total", "standalone", add.ms);
          continue;
        }
        const p = parsePhases(add.stderr);
        if (p === undefined) throw new Error("no CNI_PHASES line on stderr (is the binary built from this tree?)");
        for (const [k, v] of Object.entries(phasesOf(p, add.startedAt, add.endedAt))) push(s, k, "standalone", v);
      } finally {
        ns.remove();
      }
    }
  }
  return { samples: s };
};

/**
 * A sink for OTLP/HTTP spans in a process of its own (this worker's event loop is blocked while a
 * call is timed): it reads each request and answers 200. Returns its endpoint and how to stop it.
 */
async function startSpanSink(): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const script = `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) { await req.arrayBuffer(); return new Response(""); } }); console.log(s.port);`;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error("the span sink exited before it listened");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    endpoint: `http://127.0.0.1:${text.trim()}`,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/**
 * What metrics and span export cost a resident call (docs/observability.md): the worker's agent,
 * with both off (series "resident"), against a second agent with both on ("observed":
 * `--metrics-address`, every span exported over OTLP/HTTP protobuf to a sink in its own process),
 * alternating, for loopback ADD and bridge+host-local ADD/DEL. Checks that the observed agent did
 * count the calls and export their spans.
 */
const telemetry: Scenario = async (ctx) => {
  const sink = await startSpanSink();
  const socket = join(ctx.state, "observed", "plugins.sock");
  const metricsPort = 19584;
  const agent = Bun.spawn([join(ctx.dirs.ours, "cni-plugins"), "serve", "--socket", socket, "--metrics-address", `127.0.0.1:${metricsPort}`], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint },
  });
  const s: Samples = {};
  const ns = new ContainerNetns("tel-lo");
  try {
    await waitUntilListening(socket);
    const envOf = (series: "resident" | "observed", id: string, netns: string, extra: Partial<CallEnv> = {}): CallEnv => ({
      ...env(ctx, "resident", id, netns, extra),
      CNI_PLUGINS_SOCKET: series === "resident" ? ctx.agent.socket : socket,
    });
    const lo = JSON.stringify({ cniVersion: CNI_VERSION, name: "tel-lo", type: "loopback" });
    for (let round = -2; round < ctx.rounds * 2; round++) {
      for (const series of alternation(["resident", "observed"] as const, round)) {
        const e = envOf(series, `tel-lo-${round}`, ns.path, { CNI_IFNAME: "lo" });
        const add = call(ctx.dirs.ours, "loopback", "ADD", e, lo).ms;
        call(ctx.dirs.ours, "loopback", "DEL", e, lo);
        const brNs = new ContainerNetns(`tel-br-${series}-${round + 2}`);
        try {
          const be = envOf(series, `tel-br-${round + 2}`, brNs.path);
          const chain = [bridge(ctx, "resident", { ipMasq: false, bridge: "cnibench4" })];
          const badd = chainAdd(ctx.dirs.ours, "tel-net", chain, be);
          const bdel = chainDel(ctx.dirs.ours, "tel-net", chain, be, badd.result);
          if (round >= 0) {
            push(s, "loopback add", series, add);
            push(s, "bridge add", series, badd.ms);
            push(s, "bridge del", series, bdel);
          }
        } finally {
          brNs.remove();
        }
      }
    }
    // The observed agent counted every call and exported their spans (after its batch delay).
    await Bun.sleep(1500);
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const sample = (name: string) => text.split("\n").filter((l) => l.startsWith(name)).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
    const calls = sample('cni_plugin_calls_total{plugin="loopback",command="ADD",code="0"}');
    const exported = sample("cni_agent_spans_exported_total");
    const dropped = sample("cni_agent_spans_dropped_total");
    const expected = ctx.rounds * 2 + 2;
    const check = { ok: calls === expected && exported > 0 && dropped === 0, text: `${calls} loopback ADDs counted (${expected} made), ${exported} spans exported, ${dropped} dropped` };
    return { samples: s, checks: { "loopback add": check } };
  } finally {
    ns.remove();
    agent.kill("SIGTERM");
    await agent.exited;
    await sink.stop();
  }
};

export const SCENARIOS: Readonly<Record<string, Scenario>> = {
  version,
  loopback,
  "bridge": bridgeHostLocal,
  "cluster-local": clusterLocal,
  concurrent,
  "host-local-5000": hostLocalWith(5000),
  "host-local-20000": hostLocalWith(20_000),
  "host-local-taken-5000": hostLocalTaken(5000),
  chain5,
  "kube-nft": kube("nft", false),
  "kube-legacy": kube("legacy", false),
  "kube-nftables": kube("nft", true),
  memory,
  "agent-memory": agentMemory,
  cri,
  shim,
  phases,
  telemetry,
  runtime,
  "burst-110": burst(110),
  "burst-250": burst(250),
  "live-pods": livePods,
};

/** Removes a scenario's scratch directory. */
export function cleanState(state: string): void {
  rmSync(state, { recursive: true, force: true });
}
