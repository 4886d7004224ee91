/**
 * A node for the `cni-plugins reload` tests (test/integration/reload.test.ts): a network namespace
 * of the test's own that plays the host — the plugins, `cni-plugins reload`, its watcher, the
 * faults and (when asked) a private firewalld all run in it — with its own libcni cache, network
 * configuration and host-local directories, and pods whose namespaces are bind-mounted files (as
 * runtimes pin them). What the node holds of the plugins' firewall state can be read as one text
 * ({@link firewallState}) to compare before and after a fault.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup } from "./cleanup.ts";
import { ConflistRunner, type NetworkConfigList, type RuntimeConf } from "./conflist.ts";
import { startPrivateFirewalld, zoneSources, type PrivateFirewalld } from "./firewall-firewalld.ts";
import { startHttpServer } from "./http-probe.ts";
import { createPersistentNetns, type PersistentNetns } from "./netns.ts";
import { DIST_BIN, GO_BIN_DIR, MULTI_CALL_BINARY } from "./paths.ts";
import { makeTempDir } from "./tempdir.ts";

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Our nftables tables (each plugin's), as `nft list table` names them. */
const OUR_NFT_TABLES = ["inet cni_plugins_masquerade", "ip cni_hostport", "ip6 cni_hostport", "inet cni_plugins_firewall", "bridge nat"];

export interface Pod {
  containerID: string;
  network: NetworkConfigList;
  rt: RuntimeConf;
  ns: PersistentNetns;
  ip: string;
}

/** `cni-plugins reload` against `node`'s cache and configuration (more flags may follow). */
export function reloadArgv(node: ReloadNode): string[] {
  return [MULTI_CALL_BINARY, "reload", "--cache-dir", node.cacheDir, "--conf-dir", node.confDir];
}

export class ReloadNode {
  readonly ns: PersistentNetns;
  readonly cacheDir = makeTempDir("reload-cache-");
  readonly confDir = makeTempDir("reload-netd-");
  readonly dataDir = makeTempDir("reload-ipam-");
  readonly variant: "nft" | "legacy";
  readonly ours: ConflistRunner;
  readonly go: ConflistRunner;
  fwd: PrivateFirewalld | undefined;
  private seq = 0;

  private constructor(variant: "nft" | "legacy", fwd: PrivateFirewalld | undefined, ns: PersistentNetns) {
    this.variant = variant;
    this.fwd = fwd;
    this.ns = ns;
    const env = fwd === undefined ? {} : { DBUS_SYSTEM_BUS_ADDRESS: fwd.busAddress };
    this.ours = new ConflistRunner({ cacheDir: this.cacheDir, path: [DIST_BIN], env, hostNetns: ns.path });
    this.go = new ConflistRunner({ cacheDir: this.cacheDir, path: [GO_BIN_DIR], env, hostNetns: ns.path });
  }

  /**
   * A fresh node. `legacy`: iptables-legacy holds kubelet's hint chain, so every plugin and the
   * reload pick the legacy variant (shared/firewall/iptables/variant.ts). `firewalld`: a private
   * firewalld (and bus) works in the node.
   */
  static async create(opts: { variant: "nft" | "legacy"; firewalld: boolean }): Promise<ReloadNode> {
    const ns = createPersistentNetns();
    const node = new ReloadNode(opts.variant, undefined, ns);
    node.must(["ip", "link", "set", "lo", "up"]);
    node.must(["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    if (opts.variant === "legacy") node.must(["iptables-legacy", "-w", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]);
    if (opts.firewalld) {
      node.fwd = await startPrivateFirewalld({ netns: ns.path });
      const env = { DBUS_SYSTEM_BUS_ADDRESS: node.fwd.busAddress };
      Object.assign(node.ours.env, env);
      Object.assign(node.go.env, env);
    }
    return node;
  }

  /** The environment of commands run in the node. */
  env(): Record<string, string | undefined> {
    return { ...process.env, ...(this.fwd === undefined ? {} : { DBUS_SYSTEM_BUS_ADDRESS: this.fwd.busAddress }) };
  }

  /** Runs argv in the node's netns. */
  run(argv: string[], timeoutMs = 30_000): Run {
    const p = Bun.spawnSync(["nsenter", `--net=${this.ns.path}`, "--", ...argv], { stdout: "pipe", stderr: "pipe", env: this.env(), timeout: timeoutMs });
    return { status: p.exitCode ?? -1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  }

  /** {@link run}, throwing on failure. */
  must(argv: string[]): string {
    const r = this.run(argv);
    if (r.status !== 0) throw new Error(`${argv.join(" ")} (in the node) failed with ${r.status}: ${r.stderr}`);
    return r.stdout;
  }

  /** `cni-plugins reload ARGS` against this node's cache and configuration. */
  reload(...args: string[]): Run {
    return this.run([...reloadArgv(this), ...args]);
  }

  /** Writes the network into the node's configuration directory. */
  addNetwork(list: NetworkConfigList): void {
    mkdirSync(this.confDir, { recursive: true });
    writeFileSync(join(this.confDir, `${list.name}.conflist`), JSON.stringify(list));
  }

  /** ADDs a pod to `list` (ours), with an HTTP service on container port 80 behind `hostPort`. */
  async pod(list: NetworkConfigList, hostPort: number): Promise<Pod> {
    const ns = createPersistentNetns();
    const containerID = `reload-${process.pid}-${++this.seq}`;
    const rt: RuntimeConf = { containerID, netns: ns.path, ifName: "eth0", capabilityArgs: { portMappings: [{ hostPort, containerPort: 80, protocol: "tcp" }] } };
    const result = (await this.ours.add(list, rt)) as { ips: { address: string }[] };
    const stop = await startHttpServer(ns.path, 80);
    registerCleanup(`netns of ${containerID}`, () => {
      stop();
      ns.destroy();
    });
    return { containerID, network: list, rt, ns, ip: result.ips[0]!.address.split("/")[0]! };
  }

  /**
   * The node's firewall state as the plugins own it, one text: the rules of the nat and filter
   * tables (both families, the node's variant) and their CNI chains, the chains and rules of our
   * nftables tables, and the firewalld zone sources — as sets: sorted, each rule with its chain
   * (after a flush rules come back in the order reload restores them, which may differ from the
   * order of the pods' ADDs where that order means nothing).
   */
  firewallState(): string {
    const parts: string[] = [];
    const tools = this.variant === "legacy" ? ["iptables-legacy-save", "ip6tables-legacy-save"] : ["iptables-nft-save", "ip6tables-nft-save"];
    for (const tool of tools) {
      for (const table of ["nat", "filter"]) {
        const r = this.run([tool, "-t", table]);
        const lines = r.stdout.split("\n").filter((l) => l.startsWith("-A ") || l.startsWith(":CNI-")).map((l) => l.replace(/ \[\d+:\d+\]$/, ""));
        parts.push(`# ${tool} -t ${table}`, ...lines.sort());
      }
    }
    for (const t of OUR_NFT_TABLES) {
      const r = this.run(["nft", "list", "table", ...t.split(" ")]);
      const lines: string[] = [];
      let chain = "";
      for (const raw of r.status === 0 ? r.stdout.split("\n") : []) {
        const l = raw.trim();
        const head = /^chain (\S+) \{$/.exec(l);
        if (head !== null) chain = head[1]!;
        else if (l !== "" && l !== "}" && !l.startsWith("table ")) lines.push(`${chain}: ${l}`);
        if (head !== null) lines.push(`${chain}:`);
      }
      parts.push(`# nft ${t}`, ...lines.sort());
    }
    if (this.fwd !== undefined) {
      for (const zone of ["trusted", "internal"]) parts.push(`# firewalld ${zone}`, ...zoneSources(this.fwd.busAddress, zone).sort());
    }
    return parts.join("\n");
  }

  /** Lines of {@link firewallState} naming any of `needles`. */
  linesNaming(...needles: string[]): string[] {
    return this.firewallState()
      .split("\n")
      .filter((l) => !l.startsWith("#") && needles.some((n) => l.includes(n)));
  }
}

/** A running `cni-plugins reload --watch` in a node; its output is collected. */
export class ReloadWatcher {
  readonly proc: ReturnType<typeof Bun.spawn>;
  stdout = "";
  stderr = "";
  private readonly forget: () => void;

  constructor(node: ReloadNode, ...args: string[]) {
    this.proc = Bun.spawn(["nsenter", `--net=${node.ns.path}`, "--", ...reloadArgv(node), "--watch", ...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: node.env(),
    });
    this.forget = registerCleanup(`reload watcher pid ${this.proc.pid}`, () => this.proc.kill("SIGKILL"));
    void this.collect(this.proc.stdout as ReadableStream<Uint8Array>, (t) => (this.stdout += t));
    void this.collect(this.proc.stderr as ReadableStream<Uint8Array>, (t) => (this.stderr += t));
  }

  private async collect(stream: ReadableStream<Uint8Array>, add: (t: string) => void): Promise<void> {
    const dec = new TextDecoder();
    for await (const chunk of stream) add(dec.decode(chunk));
  }

  /** Waits until the watcher's stderr or stdout contains `text`. */
  async waitFor(text: string | RegExp, timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    const seen = (): boolean => (typeof text === "string" ? (this.stdout + this.stderr).includes(text) : text.test(this.stdout + this.stderr));
    while (!seen()) {
      if (Date.now() > end) throw new Error(`the watcher did not say ${String(text)} within ${timeoutMs} ms; stdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      if (this.proc.exitCode !== null) throw new Error(`the watcher exited (${this.proc.exitCode}); stdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      await Bun.sleep(20);
    }
  }

  /** Waits until the watcher has printed nothing for `ms` (its passes have settled). */
  async quiet(ms: number, timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    let seen = this.stdout.length + this.stderr.length;
    let since = Date.now();
    while (Date.now() - since < ms) {
      if (Date.now() > end) throw new Error(`the watcher kept printing for ${timeoutMs} ms:\n${this.stdout.slice(-2000)}`);
      await Bun.sleep(20);
      const now = this.stdout.length + this.stderr.length;
      if (now !== seen) {
        seen = now;
        since = Date.now();
      }
    }
  }

  /** SIGTERM; the exit status. */
  async stop(): Promise<number> {
    this.proc.kill("SIGTERM");
    const code = await this.proc.exited;
    this.forget();
    return code;
  }
}
