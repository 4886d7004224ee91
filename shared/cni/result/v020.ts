/**
 * Spec 0.1.0 / 0.2.0 results (upstream `types/020`): at most one IPv4 and one IPv6 config, each with
 * its own routes; no interfaces. Wire order `cniVersion, ip4, ip6, dns`; `ip, gateway, routes` inside
 * an IP config; `dns` always present (`{}` when empty).
 */
import { t, type Infer } from "../decode.ts";
import { InternalError } from "../errors.ts";
import type { Route } from "../types.ts";
import {
  cidrField,
  copyDns,
  copyRoute,
  dense,
  dnsFromWire,
  dnsJson,
  dnsSchema,
  ipField,
  nonEmpty,
  routeFromWire,
  routeJson,
  routeSchema,
} from "./common.ts";
import { canonicalCIDR, canonicalIP } from "./ip-text.ts";
import type { ResultV020, ResultV040, V020IPConfig } from "./wire.ts";

/** The JSON value upstream prints for a 0.1.0/0.2.0 result. */
export function v020Json(r: ResultV020): unknown {
  return {
    cniVersion: nonEmpty(r.cniVersion),
    ip4: r.ip4 === undefined ? undefined : ipJson(r.ip4),
    ip6: r.ip6 === undefined ? undefined : ipJson(r.ip6),
    dns: dnsJson(r.dns),
  };
}

function ipJson(ip: V020IPConfig): Record<string, unknown> {
  return {
    ip: canonicalCIDR(ip.ip).text,
    gateway: nonEmpty(ip.gateway) === undefined ? undefined : canonicalIP(ip.gateway!),
    routes: ip.routes?.length ? ip.routes.map(routeJson) : undefined,
  };
}

function copyIp(ip: V020IPConfig | undefined): V020IPConfig | undefined {
  if (ip === undefined) return undefined;
  const o: V020IPConfig = { ip: ip.ip };
  if (ip.gateway) o.gateway = ip.gateway;
  if (ip.routes?.length) o.routes = ip.routes.map(copyRoute);
  return o;
}

/** 0.1.0 ↔ 0.2.0: a relabelled deep copy. */
export function v020Relabel(from: ResultV020, toVersion: string): ResultV020 {
  const out: ResultV020 = { cniVersion: toVersion };
  const ip4 = copyIp(from.ip4);
  const ip6 = copyIp(from.ip6);
  if (ip4) out.ip4 = ip4;
  if (ip6) out.ip6 = ip6;
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

/**
 * 0.3.x/0.4.0 → 0.1.0/0.2.0 (upstream convertTo02x): the first IP whose `version` is "4" becomes
 * ip4 and the first "6" ip6; each route goes to ip4 or ip6 by its destination's family (only dst
 * and gw survive), or is dropped when that family has no IP. No IP at all is an error.
 */
export function v020FromV040(from: ResultV040, toVersion: string): ResultV020 {
  const out: ResultV020 = { cniVersion: toVersion };
  for (const ip of from.ips ?? []) {
    if (ip.version === "4" && out.ip4 === undefined) out.ip4 = v020Ip(ip.address, ip.gateway);
    else if (ip.version === "6" && out.ip6 === undefined) out.ip6 = v020Ip(ip.address, ip.gateway);
    if (out.ip4 && out.ip6) break;
  }
  for (const r of from.routes ?? []) {
    const target = canonicalCIDR(r.dst).v4 ? out.ip4 : out.ip6;
    if (target === undefined) continue;
    const route: Route = { dst: r.dst };
    if (r.gw) route.gw = r.gw;
    (target.routes ??= []).push(route);
  }
  if (out.ip4 === undefined && out.ip6 === undefined) {
    throw new InternalError("cannot convert: no valid IP addresses");
  }
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

function v020Ip(address: string, gateway: string | undefined): V020IPConfig {
  const o: V020IPConfig = { ip: address };
  if (gateway) o.gateway = gateway;
  return o;
}

// ---- decoding ----

const ipSchema = t.object("ipConfig", {
  ip: cidrField,
  gateway: ipField,
  routes: t.array(routeSchema),
});

export const v020Schema = t.object("Result", {
  cniVersion: t.string(),
  ip4: ipSchema,
  ip6: ipSchema,
  dns: dnsSchema,
});

/** A decoded 0.1.0/0.2.0 wire object → {@link ResultV020} (the version is checked by the caller). */
export function v020FromWire(w: Infer<typeof v020Schema>): ResultV020 {
  const out: ResultV020 = { cniVersion: w.cniVersion ?? "" };
  const ip = (x: Infer<typeof ipSchema> | undefined, name: string): V020IPConfig | undefined => {
    if (x === undefined) return undefined;
    if (x.ip === undefined) throw new Error(`${name}: missing "ip"`);
    const o: V020IPConfig = { ip: x.ip };
    if (x.gateway) o.gateway = x.gateway;
    const routes = dense(x.routes);
    if (routes?.length) o.routes = routes.map((r, n) => routeFromWire(r, `${name}.routes[${n}]`));
    return o;
  };
  const ip4 = ip(w.ip4, "ip4");
  const ip6 = ip(w.ip6, "ip6");
  if (ip4) out.ip4 = ip4;
  if (ip6) out.ip6 = ip6;
  const dns = dnsFromWire(w.dns);
  if (dns) out.dns = dns;
  return out;
}
