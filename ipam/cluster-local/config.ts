/**
 * cluster-local configuration: host-local's (upstream `allocator.Net`: ranges, range sets,
 * `rangeStart`/`rangeEnd`, `exclude`, `gateway`, `routes`, `resolvConf`, requested addresses through
 * `ips` and CNI_ARGS `IP`; shared/ipam/config.ts) with an `etcd` object instead of `dataDir`:
 *
 * - `endpoints`: the client URLs of the etcd members, tried in order (`http://host:port`,
 *   `https://host:port`, or `host:port`, which means https when TLS files are given, else http);
 * - `caFile`, `certFile`, `keyFile`: PEM files for TLS (the CA that signed the members'
 *   certificates; a client certificate and its key, given together);
 * - `prefix`: where the reservations live in etcd (default `/cni/ipam/`);
 * - `node`: recorded with every reservation; GC releases only this node's (default: the host name);
 * - `timeout`: how long one plugin call may wait for etcd in all (Go duration, default 10s);
 * - `endpointTimeout`: how long one member may take to answer before the next is tried (default 2s).
 *
 * Every problem is code 7 naming the field.
 */
import { decode, t } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { GoDurationError, parseGoDuration } from "../../shared/cni/go-duration.ts";
import type { LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { allocatorIpamFields, allocatorNetFields, goStruct, loadAllocatorConfig, pathField, type AllocatorConfig } from "../../shared/ipam/config.ts";
import { readTextFile } from "../../shared/sys/file.ts";

export const DEFAULT_PREFIX = "/cni/ipam/";
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_ENDPOINT_TIMEOUT_MS = 2_000;
/** Where the kernel keeps this UTS namespace's host name. */
const HOSTNAME_FILE = "/proc/sys/kernel/hostname";

/** The validated `etcd` object. */
export interface EtcdConfig {
  /** Member client URLs, in the order they are tried (`scheme://host:port`, no path). */
  endpoints: string[];
  caFile: string | undefined;
  certFile: string | undefined;
  keyFile: string | undefined;
  /** Key prefix, ending in `/`. */
  prefix: string;
  node: string;
  timeoutMs: number;
  endpointTimeoutMs: number;
}

/** The validated cluster-local configuration. */
export interface ClusterLocalConfig extends AllocatorConfig {
  etcd: EtcdConfig;
}

const etcdSchema = t.object("EtcdConfig", {
  endpoints: t.array(t.string()),
  caFile: t.string(),
  certFile: t.string(),
  keyFile: t.string(),
  prefix: t.string(),
  node: t.string(),
  timeout: t.string(),
  endpointTimeout: t.string(),
});
const ipamSchema = goStruct("IPAMConfig", t.object("IPAMConfig", { ...allocatorIpamFields, etcd: etcdSchema }));
const netSchema = t.object("Net", { ...allocatorNetFields, ipam: ipamSchema });

/** One endpoint as a URL without a path; `tls` decides the scheme of a bare `host:port`. */
function endpointURL(text: string, index: number, tls: boolean): string {
  const field = `etcd.endpoints[${index}]`;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `${tls ? "https" : "http"}://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new InvalidConfigError(`invalid ${field} ${JSON.stringify(text)}: not a URL (http://host:port or https://host:port)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidConfigError(`invalid ${field} ${JSON.stringify(text)}: the scheme must be http or https`);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw new InvalidConfigError(`invalid ${field} ${JSON.stringify(text)}: an etcd endpoint is scheme://host:port, without path, query or user`);
  }
  return `${url.protocol}//${url.host}`;
}

function duration(field: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === "") return fallback;
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch (err) {
    if (err instanceof GoDurationError) throw new InvalidConfigError(`invalid ${field}: ${err.message}`, { cause: err });
    throw err;
  }
  if (!(ms > 0)) throw new InvalidConfigError(`invalid ${field} ${JSON.stringify(text)}: must be positive`);
  return ms;
}

/** The host name of this node (the UTS namespace's), the default `etcd.node`. */
function hostName(): string {
  let name: string;
  try {
    name = readTextFile(HOSTNAME_FILE).trim();
  } catch (err) {
    throw new InvalidConfigError(`etcd.node is not set and the host name cannot be read from ${HOSTNAME_FILE}: ${(err as Error).message}`, { cause: err });
  }
  if (name === "") throw new InvalidConfigError("etcd.node is not set and the host name is empty");
  return name;
}

function loadEtcdConfig(raw: ReturnType<typeof etcdSchema.decode> | undefined): EtcdConfig {
  if (raw === undefined) throw new InvalidConfigError("IPAM config missing 'etcd' key: cluster-local needs etcd.endpoints");
  const caFile = pathField("etcd.caFile", raw.caFile);
  const certFile = pathField("etcd.certFile", raw.certFile);
  const keyFile = pathField("etcd.keyFile", raw.keyFile);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new InvalidConfigError(`etcd.certFile and etcd.keyFile go together: ${certFile === undefined ? "etcd.keyFile" : "etcd.certFile"} is set without the other`);
  }
  const tls = caFile !== undefined || certFile !== undefined;
  const list = raw.endpoints ?? [];
  if (list.length === 0) throw new InvalidConfigError("etcd.endpoints is empty: list the client URLs of the etcd members");
  const endpoints = list.map((e, i) => {
    if (e === undefined || e === "") throw new InvalidConfigError(`invalid etcd.endpoints[${i}]: empty`);
    return endpointURL(e, i, tls);
  });
  if (tls) {
    const plain = endpoints.findIndex((e) => e.startsWith("http:"));
    if (plain >= 0) {
      throw new InvalidConfigError(`invalid etcd.endpoints[${plain}] ${JSON.stringify(list[plain])}: TLS files are set (etcd.caFile, etcd.certFile) but this endpoint is plain http`);
    }
  }
  let prefix = raw.prefix === undefined || raw.prefix === "" ? DEFAULT_PREFIX : raw.prefix;
  if (!prefix.endsWith("/")) prefix += "/";
  const node = raw.node === undefined || raw.node === "" ? hostName() : raw.node;
  return {
    endpoints,
    caFile,
    certFile,
    keyFile,
    prefix,
    node,
    timeoutMs: duration("etcd.timeout", raw.timeout, DEFAULT_TIMEOUT_MS),
    endpointTimeoutMs: duration("etcd.endpointTimeout", raw.endpointTimeout, DEFAULT_ENDPOINT_TIMEOUT_MS),
  };
}

/**
 * Loads and validates the cluster-local configuration from the plugin's stdin object and CNI_ARGS
 * (code 7, or code 4 for CNI_ARGS). `forDel` relaxes nothing: DEL loads the config as ADD does, as
 * host-local's.
 */
export function loadClusterLocalConfig(args: Pick<CmdArgs, "config" | "args">, _opts: LoadOptions = {}): ClusterLocalConfig {
  const net = decode(netSchema, args.config);
  const base = loadAllocatorConfig(net, net.ipam, args.args);
  return { ...base, etcd: loadEtcdConfig(net.ipam?.etcd) };
}
