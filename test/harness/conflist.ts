/**
 * A network configuration list ("conflist") runner that behaves like libcni (containernetworking/cni
 * `libcni/api.go`), so chains such as bridge → portmap → tuning can be tested exactly as a runtime
 * drives them:
 *
 * - ADD runs the plugins in order. Each gets its own config with `name` and `cniVersion` of the list
 *   injected, `prevResult` = the previous plugin's result (from the second plugin on), and a
 *   `runtimeConfig` holding the runtime's capability arguments that the plugin declares in
 *   `capabilities`. The final result is cached.
 * - CHECK (list version >= 0.4.0) runs the plugins in order with the cached result as prevResult.
 * - DEL runs the plugins in reverse, with the cached result as prevResult when the list version is
 *   >= 0.4.0, then removes the cache entry.
 * - GC issues DEL for cached attachments of this network that are not valid any more, then (list
 *   version >= 1.1.0) GC to every plugin with `cni.dev/valid-attachments` and `cni.dev/attachments`.
 * - STATUS (list version >= 1.1.0) runs every plugin in order and stops at the first failure.
 *
 * The cache file is libcni's: `<cacheDir>/results/<network>-<containerID>-<ifname>`, JSON
 * `{"kind":"cniCacheV1","containerId","config"(base64 of the list bytes),"ifName","networkName",
 * "netns","cniArgs","capabilityArgs","result"}`, mode 0600 in a 0700 directory. Injected configs are
 * serialised with sorted keys, as Go's map marshalling does.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execPlugin, type PluginRun } from "./exec-plugin.ts";
import { DIST_BIN } from "./paths.ts";

export interface NetworkConfigList {
  name: string;
  cniVersion?: string;
  cniVersions?: string[];
  disableCheck?: boolean;
  disableGC?: boolean;
  plugins: Record<string, unknown>[];
}

/** libcni's RuntimeConf: one attachment of one container. */
export interface RuntimeConf {
  containerID: string;
  netns: string;
  ifName: string;
  /** CNI_ARGS pairs, sent as `K=V;K=V`. */
  args?: [string, string][];
  /** Capability arguments (portMappings, ips, mac, ...), filtered by each plugin's `capabilities`. */
  capabilityArgs?: Record<string, unknown>;
}

export interface GCAttachment {
  containerID: string;
  ifname: string;
}

export interface ConflistRunnerOptions {
  /** Directories searched for plugin executables, in order (default: dist/bin). */
  path?: string[];
  /** libcni's cache dir; results go to `<cacheDir>/results/`. */
  cacheDir: string;
  /** Extra environment for every plugin run. */
  env?: Record<string, string | undefined>;
  /** Runs every plugin in this network namespace (a path) instead of the test's own: its "host". */
  hostNetns?: string;
}

/** One plugin invocation made by the runner, kept for assertions. */
export interface ConflistCall {
  type: string;
  command: string;
  /** The exact config the plugin got on stdin, parsed. */
  config: Record<string, unknown>;
  run: PluginRun;
}

/** A plugin in the list failed; carries its CNI error. */
export class ConflistPluginError extends Error {
  override name = "ConflistPluginError";
  readonly type: string;
  readonly command: string;
  readonly code: number | undefined;
  readonly cniMsg: string | undefined;
  readonly run: PluginRun;
  constructor(type: string, command: string, run: PluginRun) {
    const code = typeof run.json?.code === "number" ? (run.json.code as number) : undefined;
    const msg = typeof run.json?.msg === "string" ? (run.json.msg as string) : undefined;
    super(
      `plugin type=${JSON.stringify(type)} failed (${command.toLowerCase()}): ` +
        (code !== undefined ? `code ${code}: ${msg}` : `exit ${run.status}: ${run.stdout || run.stderr}`),
    );
    this.type = type;
    this.command = command;
    this.code = code;
    this.cniMsg = msg;
    this.run = run;
  }
}

const KNOWN_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];

function versionParts(v: string): number[] {
  return v.split(".").map((p) => Number.parseInt(p, 10) || 0);
}

/** a >= b for dotted versions. */
export function versionAtLeast(a: string, b: string): boolean {
  const x = versionParts(a);
  const y = versionParts(b);
  for (let i = 0; i < 3; i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}

/** Serialises like Go's json.Marshal of map[string]interface{}: keys sorted at every map level. */
export function marshalSorted(value: unknown): string {
  const sortDeep = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortDeep);
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) out[key] = sortDeep((v as Record<string, unknown>)[key]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sortDeep(value));
}

/** The list's effective cniVersion: `cniVersion`, or the highest known entry of `cniVersions`. */
export function listVersion(list: NetworkConfigList): string {
  if (list.cniVersions && list.cniVersions.length > 0) {
    const usable = list.cniVersions.filter((v) => KNOWN_VERSIONS.includes(v));
    usable.sort((a, b) => (versionAtLeast(a, b) ? (a === b ? 0 : 1) : -1));
    const top = usable[usable.length - 1];
    if (top !== undefined) return top;
  }
  return list.cniVersion ?? "";
}

function formatCniArgs(args: [string, string][] | undefined): string | undefined {
  if (!args || args.length === 0) return undefined;
  return args.map(([k, v]) => `${k}=${v}`).join(";");
}

export class ConflistRunner {
  readonly path: string[];
  readonly cacheDir: string;
  readonly env: Record<string, string | undefined>;
  readonly hostNetns: string | undefined;
  /** Every plugin invocation, in order. */
  readonly calls: ConflistCall[] = [];

  constructor(opts: ConflistRunnerOptions) {
    this.path = opts.path ?? [DIST_BIN];
    this.cacheDir = opts.cacheDir;
    this.env = opts.env ?? {};
    this.hostNetns = opts.hostNetns;
  }

  /** libcni `FindInPath`: the first regular file named `type` in the path directories. */
  findInPath(type: string): string {
    if (type === "") throw new Error("no plugin name provided");
    if (type.includes("/")) throw new Error(`invalid plugin name: ${type}`);
    if (this.path.length === 0) throw new Error("no paths provided");
    for (const dir of this.path) {
      const candidate = join(dir, type);
      try {
        if (statSync(candidate).isFile()) return dir;
      } catch {
        // not here
      }
    }
    throw new Error(`failed to find plugin ${JSON.stringify(type)} in path [${this.path.join(" ")}]`);
  }

  /** `<cacheDir>/results/<network>-<containerID>-<ifname>`. */
  cacheFilePath(network: string, rt: Pick<RuntimeConf, "containerID" | "ifName">): string {
    return join(this.cacheDir, "results", `${network}-${rt.containerID}-${rt.ifName}`);
  }

  /** The cached result of the last ADD of this attachment, or undefined. */
  cachedResult(list: NetworkConfigList, rt: RuntimeConf): Record<string, unknown> | undefined {
    const file = this.cacheFilePath(list.name, rt);
    if (!existsSync(file)) return undefined;
    const cached = JSON.parse(readFileSync(file, "utf8")) as { kind?: string; result?: Record<string, unknown> };
    if (cached.kind !== "cniCacheV1") throw new Error(`cache file ${file} has wrong kind: ${cached.kind}`);
    return cached.result;
  }

  /** Builds one plugin's stdin as libcni `buildOneConfig` does. */
  buildPluginConfig(
    list: NetworkConfigList,
    plugin: Record<string, unknown>,
    prevResult: Record<string, unknown> | undefined,
    rt: RuntimeConf | undefined,
  ): Record<string, unknown> {
    const conf: Record<string, unknown> = { ...plugin, name: list.name, cniVersion: listVersion(list) };
    if (prevResult !== undefined) conf.prevResult = prevResult;
    if (rt?.capabilityArgs) {
      const caps = (plugin.capabilities ?? {}) as Record<string, unknown>;
      const runtimeConfig: Record<string, unknown> = {};
      for (const [cap, enabled] of Object.entries(caps)) {
        if (enabled === true && Object.hasOwn(rt.capabilityArgs, cap)) runtimeConfig[cap] = rt.capabilityArgs[cap];
      }
      if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
    }
    return conf;
  }

  private async invoke(
    command: string,
    conf: Record<string, unknown>,
    rt: RuntimeConf | undefined,
  ): Promise<PluginRun> {
    const type = String(conf.type ?? "");
    const dir = this.findInPath(type);
    const run = await execPlugin(type, {
      command,
      containerID: rt?.containerID ?? "",
      netns: rt?.netns ?? "",
      ifName: rt?.ifName ?? "",
      args: formatCniArgs(rt?.args) ?? "",
      path: this.path.join(":"),
      config: marshalSorted(conf),
      env: this.env,
      binDir: dir,
      ...(this.hostNetns !== undefined ? { hostNetns: this.hostNetns } : {}),
    });
    this.calls.push({ type, command, config: conf, run });
    if (run.status !== 0) throw new ConflistPluginError(type, command, run);
    return run;
  }

  /** AddNetworkList: ADD in order, chaining results; caches and returns the final result. */
  async add(list: NetworkConfigList, rt: RuntimeConf): Promise<Record<string, unknown>> {
    let result: Record<string, unknown> | undefined;
    for (const plugin of list.plugins) {
      const conf = this.buildPluginConfig(list, plugin, result, rt);
      const run = await this.invoke("ADD", conf, rt);
      if (typeof run.json !== "object" || run.json === null) {
        throw new Error(`plugin ${String(conf.type)} ADD printed no result object: ${JSON.stringify(run.stdout)}`);
      }
      result = run.json as Record<string, unknown>;
    }
    if (result === undefined) throw new Error(`network list ${list.name} has no plugins`);
    this.writeCache(list, rt, result);
    return result;
  }

  /** CheckNetworkList: CHECK in order with the cached result. */
  async check(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    const version = listVersion(list);
    if (!versionAtLeast(version, "0.4.0")) {
      throw new Error(`configuration version ${JSON.stringify(version)} does not support the CHECK command`);
    }
    if (list.disableCheck) return;
    const cached = this.cachedResult(list, rt);
    for (const plugin of list.plugins) {
      await this.invoke("CHECK", this.buildPluginConfig(list, plugin, cached, rt), rt);
    }
  }

  /** DelNetworkList: DEL in reverse order (with the cached result from 0.4.0 on), then drop the cache. */
  async del(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    let cached: Record<string, unknown> | undefined;
    if (versionAtLeast(listVersion(list), "0.4.0")) {
      try {
        cached = this.cachedResult(list, rt);
      } catch {
        rmSync(this.cacheFilePath(list.name, rt), { force: true });
        cached = undefined;
      }
    }
    for (let i = list.plugins.length - 1; i >= 0; i--) {
      const plugin = list.plugins[i]!;
      await this.invoke("DEL", this.buildPluginConfig(list, plugin, cached, rt), rt);
    }
    rmSync(this.cacheFilePath(list.name, rt), { force: true });
  }

  /** GCNetworkList: DEL stale cached attachments, then GC every plugin (list version >= 1.1.0). */
  async gc(list: NetworkConfigList, valid: GCAttachment[]): Promise<void> {
    const errors: Error[] = [];
    const key = (a: { containerID: string; ifname: string }): string => `${a.containerID}\0${a.ifname}`;
    const validKeys = new Set(valid.map(key));
    for (const att of this.cachedAttachments()) {
      if (att.networkName !== list.name || validKeys.has(key({ containerID: att.containerId, ifname: att.ifName }))) {
        continue;
      }
      const rt: RuntimeConf = { containerID: att.containerId, netns: att.netns ?? "", ifName: att.ifName };
      if (att.cniArgs) rt.args = att.cniArgs;
      if (att.capabilityArgs) rt.capabilityArgs = att.capabilityArgs;
      try {
        await this.del(list, rt);
      } catch (err) {
        errors.push(new Error(`failed to delete stale attachment ${att.containerId} ${att.ifName}: ${(err as Error).message}`));
      }
    }
    if (versionAtLeast(listVersion(list), "1.1.0")) {
      for (const plugin of list.plugins) {
        const conf: Record<string, unknown> = {
          ...plugin,
          name: list.name,
          cniVersion: listVersion(list),
          // libcni on main sends the list under both keys (cni#1101, #1103)
          "cni.dev/valid-attachments": valid,
          "cni.dev/attachments": valid,
        };
        try {
          await this.invoke("GC", conf, undefined);
        } catch (err) {
          errors.push(err as Error);
        }
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, errors.map((e) => e.message).join("; "));
  }

  /** GetStatusNetworkList: STATUS to every plugin in order (list version >= 1.1.0), first failure wins. */
  async status(list: NetworkConfigList): Promise<void> {
    if (!versionAtLeast(listVersion(list), "1.1.0")) return;
    for (const plugin of list.plugins) {
      await this.invoke("STATUS", { ...plugin, name: list.name, cniVersion: listVersion(list) }, undefined);
    }
  }

  /** Cached attachments (libcni `GetCachedAttachments`), every network. */
  cachedAttachments(): CacheEntry[] {
    const dir = join(this.cacheDir, "results");
    if (!existsSync(dir)) return [];
    const out: CacheEntry[] = [];
    for (const name of readdirSync(dir).sort()) {
      try {
        const entry = JSON.parse(readFileSync(join(dir, name), "utf8")) as CacheEntry;
        if (entry.kind === "cniCacheV1" && entry.ifName && entry.networkName) out.push(entry);
      } catch {
        // unreadable entries are skipped, as libcni does
      }
    }
    return out;
  }

  private writeCache(list: NetworkConfigList, rt: RuntimeConf, result: Record<string, unknown>): void {
    const entry: CacheEntry = {
      kind: "cniCacheV1",
      containerId: rt.containerID,
      config: Buffer.from(listBytes(list)).toString("base64"),
      ifName: rt.ifName,
      networkName: list.name,
      result,
    };
    if (rt.netns !== "") entry.netns = rt.netns;
    if (rt.args && rt.args.length > 0) entry.cniArgs = rt.args;
    if (rt.capabilityArgs && Object.keys(rt.capabilityArgs).length > 0) entry.capabilityArgs = rt.capabilityArgs;
    const file = this.cacheFilePath(list.name, rt);
    mkdirSync(join(this.cacheDir, "results"), { recursive: true, mode: 0o700 });
    // Field order as Go marshals libcni's cachedInfo struct.
    const ordered = {
      kind: entry.kind,
      containerId: entry.containerId,
      config: entry.config,
      ifName: entry.ifName,
      networkName: entry.networkName,
      ...(entry.netns !== undefined ? { netns: entry.netns } : {}),
      ...(entry.cniArgs !== undefined ? { cniArgs: entry.cniArgs } : {}),
      ...(entry.capabilityArgs !== undefined ? { capabilityArgs: entry.capabilityArgs } : {}),
      result: entry.result,
    };
    writeFileSync(file, JSON.stringify(ordered), { mode: 0o600 });
  }
}

/** One libcni cache file (`cachedInfo`). */
export interface CacheEntry {
  kind: string;
  containerId: string;
  /** base64 of the network list bytes. */
  config: string;
  ifName: string;
  networkName: string;
  netns?: string;
  cniArgs?: [string, string][];
  capabilityArgs?: Record<string, unknown>;
  result?: Record<string, unknown>;
}

/** The bytes libcni keeps for a list: the list as JSON. */
export function listBytes(list: NetworkConfigList): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(list));
}
