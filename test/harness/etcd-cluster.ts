/**
 * A real three-member etcd cluster (Debian's etcd-server, etcd 3.4) for the cluster-local tests and
 * the bench: members `m1`..`m3` on ports `<base>+1..3` (clients) and `<base>+11..13` (peers), data
 * in a fresh directory under /dev/shm (etcd fsyncs every commit; a tmpfs keeps that cheap), each
 * started by PID and ended by PID. With `tls`, a CA, a server certificate (for 127.0.0.1 and the
 * extra listen address) and a client certificate are made with openssl, and the members require
 * client certificates.
 *
 * The tests read etcd through this module's own requests to the JSON gateway, never through the
 * plugin's client. This module imports no test framework: test files call {@link EtcdCluster.stop}
 * after their tests and register {@link EtcdCluster.stopNow} with their fixture cleanup for a test
 * process that ends early; the bench calls stop itself.
 */
import type { Subprocess } from "bun";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ETCD_BINARY = "/usr/bin/etcd";

export interface EtcdTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** A CA that did not sign the members' certificates. */
  otherCaFile: string;
}

export interface EtcdClusterOptions {
  /** Client port of m1 is base+1 (default 23790). */
  basePort?: number;
  /** An extra address the members' client ports listen on (besides 127.0.0.1), e.g. a bridge's. */
  listenAddress?: string;
  tls?: boolean;
  /**
   * Run the members under the normal scheduling policy even when this process runs under a
   * real-time one (the bench's workers do; etcd stands for a cluster elsewhere, not for the
   * measured plugin processes).
   */
  normalPriority?: boolean;
}

export interface StoredKey {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

interface Member {
  name: string;
  clientPort: number;
  peerPort: number;
  dataDir: string;
  proc: Subprocess | undefined;
}

function sh(argv: string[], cwd: string): void {
  const r = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${r.stderr.toString().trim()}`);
}

/** CA, server and client certificates (EC P-256, one day). */
function makeCertificates(dir: string, sanIPs: string[]): EtcdTlsFiles {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const ca = (name: string) => sh(["openssl", "req", "-x509", ...ec, "-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "1", "-subj", `/CN=${name}`], dir);
  const leaf = (name: string, ext: string) => {
    sh(["openssl", "req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    sh(["openssl", "x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "1", "-extfile", `${name}.ext`], dir);
  };
  ca("ca");
  ca("other-ca");
  leaf("server", `subjectAltName=${sanIPs.map((ip) => `IP:${ip}`).join(",")}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  leaf("client", "extendedKeyUsage=clientAuth\n");
  return { caFile: join(dir, "ca.crt"), certFile: join(dir, "client.crt"), keyFile: join(dir, "client.key"), otherCaFile: join(dir, "other-ca.crt") };
}

export class EtcdCluster {
  readonly dir: string;
  readonly tls: EtcdTlsFiles | undefined;
  readonly #members: Member[];
  readonly #host: string;
  readonly #listen: string | undefined;
  readonly #prefix: string[];
  readonly #exitHook = () => this.stopNow();

  private constructor(dir: string, members: Member[], tls: EtcdTlsFiles | undefined, listen: string | undefined, prefix: string[]) {
    this.dir = dir;
    this.#prefix = prefix;
    this.#members = members;
    this.tls = tls;
    this.#listen = listen;
    this.#host = listen ?? "127.0.0.1";
    process.on("exit", this.#exitHook);
  }

  /** Starts the three members and waits until the cluster has a leader. */
  static async start(o: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    if (!existsSync(ETCD_BINARY)) throw new Error(`${ETCD_BINARY} is missing (Debian package etcd-server; test/setup-host.sh installs it)`);
    const base = o.basePort ?? 23790;
    const root = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    const dir = mkdtempSync(join(root, "cni-etcd-"));
    const tls = o.tls ? makeCertificates(dir, ["127.0.0.1", ...(o.listenAddress ? [o.listenAddress] : [])]) : undefined;
    const members = [1, 2, 3].map((i) => ({ name: `m${i}`, clientPort: base + i, peerPort: base + 10 + i, dataDir: join(dir, `m${i}`), proc: undefined }));
    const cluster = new EtcdCluster(dir, members, tls, o.listenAddress, o.normalPriority ? ["chrt", "--other", "0"] : []);
    try {
      for (const m of members) cluster.#spawn(m);
      await cluster.waitHealthy();
    } catch (err) {
      cluster.stopNow();
      throw err;
    }
    return cluster;
  }

  /** The client URLs of the members, m1 first. */
  get endpoints(): string[] {
    return this.#members.map((m) => this.endpoint(m.name));
  }

  endpoint(name: string): string {
    return `${this.tls ? "https" : "http"}://${this.#host}:${this.#member(name).clientPort}`;
  }

  /** The `etcd` object of a cluster-local config for this cluster. */
  etcdConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const files = this.tls === undefined ? {} : { caFile: this.tls.caFile, certFile: this.tls.certFile, keyFile: this.tls.keyFile };
    return { endpoints: this.endpoints, ...files, ...extra };
  }

  #member(name: string): Member {
    const m = this.#members.find((x) => x.name === name);
    if (m === undefined) throw new Error(`no member ${name}`);
    return m;
  }

  #spawn(m: Member): void {
    mkdirSync(m.dataDir, { recursive: true });
    const scheme = this.tls ? "https" : "http";
    const listen = [`${scheme}://127.0.0.1:${m.clientPort}`, ...(this.#listen ? [`${scheme}://${this.#listen}:${m.clientPort}`] : [])];
    const cluster = this.#members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(",");
    const tlsArgs = this.tls === undefined ? [] : ["--cert-file", join(this.dir, "server.crt"), "--key-file", join(this.dir, "server.key"), "--trusted-ca-file", this.tls.caFile, "--client-cert-auth"];
    const log = Bun.file(join(this.dir, `${m.name}.log`));
    m.proc = Bun.spawn(
      [
        ...this.#prefix,
        ETCD_BINARY,
        "--name", m.name,
        "--data-dir", m.dataDir,
        "--listen-client-urls", listen.join(","),
        "--advertise-client-urls", listen[listen.length - 1]!,
        "--listen-peer-urls", `http://127.0.0.1:${m.peerPort}`,
        "--initial-advertise-peer-urls", `http://127.0.0.1:${m.peerPort}`,
        "--initial-cluster", cluster,
        "--initial-cluster-state", "new",
        "--initial-cluster-token", `cni-test-${process.pid}`,
        "--logger", "zap",
        "--log-outputs", "stderr",
        "--log-level", "warn",
        ...tlsArgs,
      ],
      { stdin: "ignore", stdout: "ignore", stderr: log },
    );
  }

  /** The members that run. */
  running(): string[] {
    return this.#members.filter((m) => m.proc !== undefined && m.proc.exitCode === null && m.proc.signalCode === null).map((m) => m.name);
  }

  /** SIGKILL to one member (by its PID); waits until it is gone. */
  async kill(name: string): Promise<void> {
    const m = this.#member(name);
    if (m.proc === undefined) return;
    m.proc.kill("SIGKILL");
    await m.proc.exited;
    m.proc = undefined;
  }

  /** Starts a killed member again on its data. */
  restart(name: string): void {
    const m = this.#member(name);
    if (m.proc !== undefined) throw new Error(`${name} is running`);
    this.#spawn(m);
  }

  /** One request to the JSON gateway of a member (the oracle; not the plugin's client). */
  async #post(name: string, path: string, body: unknown, leader = false): Promise<{ status: number; json: any }> {
    const tls = this.tls === undefined ? undefined : { ca: readFileSync(this.tls.caFile, "utf8"), cert: readFileSync(this.tls.certFile, "utf8"), key: readFileSync(this.tls.keyFile, "utf8") };
    const res = await fetch(`${this.endpoint(name)}${path}`, {
      method: "POST",
      body: JSON.stringify(body),
      headers: leader ? { "Grpc-Metadata-hasleader": "true" } : {},
      signal: AbortSignal.timeout(2000),
      ...(tls === undefined ? {} : { tls }),
    });
    return { status: res.status, json: await res.json() };
  }

  /** True when `name` answers a linearizable read (it sees a leader with a quorum). */
  async hasQuorum(name: string): Promise<boolean> {
    try {
      return (await this.#post(name, "/v3/kv/range", { key: b64("health") }, true)).status === 200;
    } catch {
      return false;
    }
  }

  /** Waits until every running member answers a linearizable read. */
  async waitHealthy(ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      const states = await Promise.all(this.running().map((n) => this.hasQuorum(n)));
      if (states.length > 0 && states.every(Boolean)) return;
      if (Date.now() > end) throw new Error(`etcd cluster not healthy within ${ms} ms:\n${this.logs()}`);
      await Bun.sleep(100);
    }
  }

  /** Waits until `name` reports that it has no leader (a read asking for one is refused). */
  async waitNoLeader(name: string, ms = 10_000): Promise<void> {
    const end = Date.now() + ms;
    while (await this.hasQuorum(name)) {
      if (Date.now() > end) throw new Error(`${name} still has a leader after ${ms} ms`);
      await Bun.sleep(100);
    }
  }

  /** Makes `name` the leader (etcd's MoveLeader, sent to the current leader). */
  async makeLeader(name: string): Promise<void> {
    const status = await this.#post(name, "/v3/maintenance/status", {});
    const target = String(status.json.header.member_id);
    const leader = String(status.json.leader);
    if (leader === target) return;
    for (const m of this.running()) {
      const s = await this.#post(m, "/v3/maintenance/status", {});
      if (String(s.json.header.member_id) !== leader) continue;
      const moved = await this.#post(m, "/v3/maintenance/transfer-leadership", { targetID: target });
      if (moved.status !== 200) throw new Error(`MoveLeader to ${name} failed: ${JSON.stringify(moved.json)}`);
      return;
    }
    throw new Error(`the leader of the cluster is not running`);
  }

  /** Every key under `prefix`, read from a running member. */
  async keys(prefix: string): Promise<StoredKey[]> {
    const name = this.running()[0];
    if (name === undefined) throw new Error("no member runs");
    const { json } = await this.#post(name, "/v3/kv/range", { key: b64(prefix), range_end: b64(prefixEnd(prefix)) });
    return ((json.kvs ?? []) as Record<string, string>[]).map((kv) => ({
      key: unb64(kv.key!),
      value: unb64(kv.value ?? ""),
      createRevision: Number(kv.create_revision),
      modRevision: Number(kv.mod_revision),
    }));
  }

  /** Deletes every key under `prefix`. */
  async deletePrefix(prefix: string): Promise<void> {
    const name = this.running()[0]!;
    await this.#post(name, "/v3/kv/deleterange", { key: b64(prefix), range_end: b64(prefixEnd(prefix)) });
  }

  /** The members' logs (for failure messages). */
  logs(): string {
    return this.#members
      .map((m) => {
        const file = join(this.dir, `${m.name}.log`);
        return existsSync(file) ? `--- ${m.name}\n${readFileSync(file, "utf8").split("\n").slice(-15).join("\n")}` : "";
      })
      .join("\n");
  }

  /** Kills every member by PID, waits until each is gone (reaped), and removes the data. */
  async stop(): Promise<void> {
    await Promise.all(this.#members.map((m) => this.kill(m.name)));
    this.stopNow();
  }

  /** Kills every member by PID and removes the data (synchronous: usable from exit hooks). */
  stopNow(): void {
    for (const m of this.#members) {
      if (m.proc !== undefined) {
        m.proc.kill("SIGKILL");
        m.proc = undefined;
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    process.off("exit", this.#exitHook);
  }
}

function b64(text: string): string {
  return Buffer.from(text).toString("base64");
}

function unb64(text: string): string {
  return Buffer.from(text, "base64").toString("utf8");
}

function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
