/**
 * One file of the runtimes' libcni cache, `<cacheDir>/results/<network>-<containerID>-<ifName>`
 * (libcni `cachedInfo`, kind `cniCacheV1`, written after every successful ADD and removed after
 * DEL): the attachment, the network configuration the runtime used (`config`: the list's or the
 * single config's bytes, base64 in the JSON), its netns, CNI_ARGS, capability arguments and the
 * result. Parsing throws only a {@link CacheEntryError} saying what is wrong with the entry; a
 * config that cannot be used is reported in `configProblem` (the rest of the entry still counts).
 */
import { parseNetworkFile, type NetworkList } from "./networks.ts";

export const RESULTS_SUBDIR = "results";

export interface CacheEntry {
  file: string;
  containerID: string;
  ifName: string;
  networkName: string;
  /** "" when the runtime recorded none. */
  netns: string;
  cniArgs: [string, string][];
  capabilityArgs: Record<string, unknown>;
  /** The network the runtime used (from `config`); undefined when the entry has none usable. */
  network: NetworkList | undefined;
  /** Why `config` is not usable, when it is present but not. */
  configProblem?: string;
  /** The cached result as stored (in the network's cniVersion); undefined when absent. */
  result: unknown;
}

export class CacheEntryError extends Error {
  override name = "CacheEntryError";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses one cache file's text (see module doc). */
export function parseCacheEntry(file: string, text: string): CacheEntry {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CacheEntryError(`not JSON (truncated?): ${(err as Error).message}`);
  }
  if (!isObject(doc)) throw new CacheEntryError("not a JSON object");
  if (doc.kind !== "cniCacheV1") throw new CacheEntryError(`kind ${JSON.stringify(doc.kind ?? null)} is not cniCacheV1`);
  const { containerId, ifName, networkName } = doc;
  if (typeof containerId !== "string" || containerId === "") throw new CacheEntryError('no "containerId"');
  if (typeof ifName !== "string" || ifName === "") throw new CacheEntryError('no "ifName"');
  if (typeof networkName !== "string" || networkName === "") throw new CacheEntryError('no "networkName"');
  let network: NetworkList | undefined;
  let configProblem: string | undefined;
  if (doc.config !== undefined && doc.config !== null) {
    const parsed = typeof doc.config === "string" ? parseNetworkFile("config", Buffer.from(doc.config, "base64").toString("utf8")) : 'config: not base64 text';
    if (typeof parsed === "string") configProblem = parsed;
    else if (parsed.name !== networkName) configProblem = `config: names network ${JSON.stringify(parsed.name)}, not ${JSON.stringify(networkName)}`;
    else network = { ...parsed, file };
  }
  const cniArgs = Array.isArray(doc.cniArgs) ? doc.cniArgs.filter((p): p is [string, string] => Array.isArray(p) && p.length === 2 && p.every((x) => typeof x === "string")) : [];
  return {
    file,
    containerID: containerId,
    ifName,
    networkName,
    netns: typeof doc.netns === "string" ? doc.netns : "",
    cniArgs,
    capabilityArgs: isObject(doc.capabilityArgs) ? doc.capabilityArgs : {},
    network,
    ...(configProblem !== undefined ? { configProblem } : {}),
    result: doc.result,
  };
}

/** Addresses of a result object (any spec version), without prefix length. */
export function resultAddresses(result: unknown): string[] {
  if (!isObject(result)) return [];
  const r = result as { ips?: { address?: unknown }[]; ip4?: { ip?: unknown }; ip6?: { ip?: unknown } };
  const cidrs = [...(Array.isArray(r.ips) ? r.ips : []).map((i) => i?.address), r.ip4?.ip, r.ip6?.ip];
  return cidrs.filter((c): c is string => typeof c === "string").map((c) => c.split("/")[0]!);
}
