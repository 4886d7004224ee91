/**
 * static: an IPAM plugin that hands out exactly the addresses it is given (upstream
 * plugins/ipam/static/main.go). Nothing is stored anywhere.
 *
 * ADD returns the addresses (config `ipam.addresses`, CNI_ARGS `IP`/`GATEWAY`, `args.cni.ips`,
 * `runtimeConfig.ips`; precedence in config.ts) with the `ipam.routes` and the ipam-level `ipam.dns`.
 * CHECK compares the configured addresses against prevResult. DEL, STATUS and GC do nothing and
 * succeed (DEL does not even read the config).
 *
 * Deviations from upstream: config errors are code 7 and a missing prevResult on CHECK is code 7
 * (upstream: 999); an undecodable prevResult is code 6; routes without `dst` are refused instead of
 * printing `<nil>`; Go's untagged `Address`/`Version` fields must agree with `address` (config.ts).
 */
import { decode, t } from "../../shared/cni/decode.ts";
import { CniError, InternalError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { dnsSchema } from "../../shared/cni/result/common.ts";
import { parsePrevResult, prevResultOf } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, IPConfig, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { ipEqual, parseIP } from "../../shared/ip/addr.ts";
import { loadStaticConfig } from "./config.ts";

function add(args: CmdArgs): Result {
  const conf = loadStaticConfig(args);
  const result: Result = {};
  if (conf.addresses.length > 0) {
    result.ips = conf.addresses.map((a) => {
      const ip: IPConfig = { address: a.cidr.text };
      if (a.gateway) ip.gateway = a.gateway;
      return ip;
    });
  }
  if (conf.routes.length > 0) result.routes = conf.routes;
  if (conf.dns) result.dns = conf.dns;
  return result;
}

/**
 * The generic NetConf upstream's CHECK decodes after the IPAM config (`failed to load netconf: …`
 * on a type error in one of these fields).
 */
const NetConfWire = t.object("NetConf", {
  cniVersion: t.string(),
  name: t.string(),
  type: t.string(),
  capabilities: t.map(t.bool()),
  ipam: t.object("types.IPAM", { type: t.string() }),
  dns: dnsSchema,
  prevResult: t.map(t.raw()),
});

function check(args: CmdArgs): void {
  const conf = loadStaticConfig(args);
  try {
    decode(NetConfWire, args.config);
  } catch (err) {
    if (err instanceof CniError) throw new CniError(err.code, `failed to load netconf: ${err.message}`, { cause: err });
    throw new InvalidConfigError(`failed to load netconf: ${messageOf(err)}`, { cause: err });
  }
  const raw = prevResultOf(args.config);
  if (raw === undefined) throw new InvalidConfigError("Required prevResult missing");
  const prev = parsePrevResult(raw, args.cniVersion);

  // Each configured address found in prevResult must carry the configured gateway (if any).
  for (const want of conf.addresses) {
    for (const got of prev.ips ?? []) {
      const gotText = got.address.slice(0, got.address.indexOf("/"));
      const gotIp = parseIP(gotText);
      if (gotIp === null || !ipEqual(gotIp, want.cidr.ip)) continue;
      if (want.gateway === undefined || want.gateway === got.gateway) break;
      throw new InternalError(`static: Failed to match addr ${gotText} on interface ${args.ifName}`);
    }
  }
}

export const staticPlugin: PluginSpec = {
  name: "static",
  versions: ALL_VERSIONS,
  add,
  check,
  del: () => undefined,
  status: () => undefined,
  gc: () => undefined,
};
