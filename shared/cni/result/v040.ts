/**
 * Spec 0.3.0 / 0.3.1 / 0.4.0 results (upstream `types/040`).
 *
 * Wire order is the Go struct order `cniVersion, interfaces, ips, routes, dns`; empty lists are
 * omitted and `dns` is always present (`{}` when empty). Each IP carries `version` ("4"/"6").
 */
import { t, type Infer } from "../decode.ts";
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
import type { ResultV020, ResultV040, V020IPConfig, V040IPConfig, V040Interface } from "./wire.ts";

/** The JSON value upstream prints for a 0.3.x/0.4.0 result. */
export function v040Json(r: ResultV040): unknown {
  return {
    cniVersion: nonEmpty(r.cniVersion),
    interfaces: r.interfaces?.length
      ? r.interfaces.map((i) => ({ name: i.name, mac: nonEmpty(i.mac), sandbox: nonEmpty(i.sandbox) }))
      : undefined,
    ips: r.ips?.length
      ? r.ips.map((ip) => ({
          version: ip.version,
          interface: ip.interface,
          address: canonicalCIDR(ip.address).text,
          gateway: nonEmpty(ip.gateway) === undefined ? undefined : canonicalIP(ip.gateway!),
        }))
      : undefined,
    routes: r.routes?.length ? r.routes.map(routeJson) : undefined,
    dns: dnsJson(r.dns),
  };
}

/** Among 0.3.0/0.3.1/0.4.0: a relabelled deep copy (upstream convertInternal). */
export function v040Relabel(from: ResultV040, toVersion: string): ResultV040 {
  const out: ResultV040 = { cniVersion: toVersion };
  if (from.interfaces?.length) out.interfaces = from.interfaces.map((i) => ({ ...i }));
  if (from.ips?.length) out.ips = from.ips.map((ip) => ({ ...ip }));
  if (from.routes?.length) out.routes = from.routes.map(copyRoute);
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

/** 0.1.0/0.2.0 → 0.3.x/0.4.0: ip4 then ip6 become `ips`; their routes, in that order, become `routes`. */
export function v040FromV020(from: ResultV020, toVersion: string): ResultV040 {
  const out: ResultV040 = { cniVersion: toVersion };
  const ips: V040IPConfig[] = [];
  const routes: Route[] = [];
  const take = (ip: V020IPConfig | undefined, version: string) => {
    if (ip === undefined) return;
    const o: V040IPConfig = { version, address: ip.ip };
    if (ip.gateway) o.gateway = ip.gateway;
    ips.push(o);
    for (const r of ip.routes ?? []) routes.push(copyRoute(r));
  };
  take(from.ip4, "4");
  take(from.ip6, "6");
  if (ips.length) out.ips = ips;
  if (routes.length) out.routes = routes;
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

// ---- decoding ----

const interfaceSchema = t.object("Interface", {
  name: t.string(),
  mac: t.string(),
  sandbox: t.string(),
});

const ipSchema = t.object("ipConfig", {
  version: t.string(),
  interface: t.int(),
  address: cidrField,
  gateway: ipField,
});

export const v040Schema = t.object("Result", {
  cniVersion: t.string(),
  interfaces: t.array(interfaceSchema),
  ips: t.array(ipSchema),
  routes: t.array(routeSchema),
  dns: dnsSchema,
});

/** A decoded 0.3.x/0.4.0 wire object → {@link ResultV040} (the version is checked by the caller). */
export function v040FromWire(w: Infer<typeof v040Schema>): ResultV040 {
  const out: ResultV040 = { cniVersion: w.cniVersion ?? "" };
  const interfaces = dense(w.interfaces);
  if (interfaces?.length) {
    out.interfaces = interfaces.map((i) => {
      const o: V040Interface = { name: i.name ?? "" };
      if (i.mac) o.mac = i.mac;
      if (i.sandbox) o.sandbox = i.sandbox;
      return o;
    });
  }
  const ips = dense(w.ips);
  if (ips?.length) {
    out.ips = ips.map((ip, n) => {
      if (ip.address === undefined) throw new Error(`ips[${n}]: missing "address"`);
      const o: V040IPConfig = { version: ip.version ?? "", address: ip.address };
      if (ip.interface !== undefined) o.interface = ip.interface;
      if (ip.gateway) o.gateway = ip.gateway;
      return o;
    });
  }
  const routes = dense(w.routes);
  if (routes?.length) out.routes = routes.map((r, n) => routeFromWire(r, `routes[${n}]`));
  const dns = dnsFromWire(w.dns);
  if (dns) out.dns = dns;
  return out;
}
