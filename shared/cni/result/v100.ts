/**
 * Spec 1.0.0 / 1.1.0 results (upstream `types/100`; "the types did not change between 1.0 and 1.1").
 *
 * The in-memory shape is the suite's current {@link Result}. On the wire, HEAD's `MarshalJSON`
 * round-trips the struct through a `map[string]interface{}`, so every object's keys come out sorted
 * (kept here). HEAD also drops an empty `dns`; we print `"dns": {}` as Go 1.1.1 does (its
 * `omitempty` never omits a struct), because iSulad's C libcni refuses a result without it
 * (`convert_curr_dns: Empty dns argument`).
 */
import { t, type Infer } from "../decode.ts";
import type { IPConfig, Interface, Result } from "../types.ts";
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
  nonZero,
  routeFromWire,
  routeJson,
  routeSchema,
} from "./common.ts";
import { sortKeysDeep } from "./go-json.ts";
import { canonicalCIDR, canonicalIP } from "./ip-text.ts";
import type { ResultV040, ResultV100 } from "./wire.ts";

/** The JSON value printed for a 1.x result: sorted keys (HEAD), `dns` always present (Go 1.1.1). */
export function v100Json(r: ResultV100): unknown {
  return sortKeysDeep({
    cniVersion: nonEmpty(r.cniVersion),
    interfaces: nonEmptyMap(r.interfaces, interfaceJson),
    ips: nonEmptyMap(r.ips, ipJson),
    routes: nonEmptyMap(r.routes, routeJson),
    dns: dnsJson(r.dns),
  });
}

function interfaceJson(i: Interface): Record<string, unknown> {
  return {
    name: i.name,
    mac: nonEmpty(i.mac),
    mtu: nonZero(i.mtu),
    sandbox: nonEmpty(i.sandbox),
    socketPath: nonEmpty(i.socketPath),
    pciID: nonEmpty(i.pciID),
  };
}

function ipJson(ip: IPConfig): Record<string, unknown> {
  return {
    interface: ip.interface,
    address: canonicalCIDR(ip.address).text,
    gateway: nonEmpty(ip.gateway) === undefined ? undefined : canonicalIP(ip.gateway!),
  };
}

function nonEmptyMap<T>(list: readonly T[] | undefined, f: (x: T) => unknown): unknown[] | undefined {
  return list === undefined || list.length === 0 ? undefined : list.map(f);
}

/** A deep copy of a current-type result, labelled `version`. */
export function copyV100(r: Result, version: string): ResultV100 {
  const out: ResultV100 = { cniVersion: version };
  if (r.interfaces?.length) out.interfaces = r.interfaces.map((i) => ({ ...i }));
  if (r.ips?.length) out.ips = r.ips.map((ip) => ({ ...ip }));
  if (r.routes?.length) out.routes = r.routes.map(copyRoute);
  const dns = copyDns(r.dns);
  if (dns) out.dns = dns;
  return out;
}

// ---- 1.x <-> 0.3.x/0.4.0 (upstream convertFrom04x / convertTo04x) ----

/** 0.3.x/0.4.0 → 1.x: drops the per-IP `version`; interfaces keep name/mac/sandbox. */
export function v100FromV040(from: ResultV040, toVersion: string): ResultV100 {
  const out: ResultV100 = { cniVersion: toVersion };
  if (from.interfaces?.length) {
    out.interfaces = from.interfaces.map((i) => {
      const o: Interface = { name: i.name };
      if (i.mac) o.mac = i.mac;
      if (i.sandbox) o.sandbox = i.sandbox;
      return o;
    });
  }
  if (from.ips?.length) {
    out.ips = from.ips.map((ip) => {
      const o: IPConfig = { address: ip.address };
      if (ip.gateway) o.gateway = ip.gateway;
      if (ip.interface !== undefined) o.interface = ip.interface;
      return o;
    });
  }
  if (from.routes?.length) out.routes = from.routes.map(copyRoute);
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

/** 1.x → 0.3.x/0.4.0: `version` from the address family; interface mtu/socketPath/pciID dropped. */
export function v100ToV040(from: ResultV100, toVersion: string): ResultV040 {
  const out: ResultV040 = { cniVersion: toVersion };
  if (from.interfaces?.length) {
    out.interfaces = from.interfaces.map((i) => {
      const o: ResultV040Interface = { name: i.name };
      if (i.mac) o.mac = i.mac;
      if (i.sandbox) o.sandbox = i.sandbox;
      return o;
    });
  }
  if (from.ips?.length) {
    out.ips = from.ips.map((ip) => {
      const o: ResultV040IP = { version: canonicalCIDR(ip.address).v4 ? "4" : "6", address: ip.address };
      if (ip.interface !== undefined) o.interface = ip.interface;
      if (ip.gateway) o.gateway = ip.gateway;
      return o;
    });
  }
  if (from.routes?.length) out.routes = from.routes.map(copyRoute);
  const dns = copyDns(from.dns);
  if (dns) out.dns = dns;
  return out;
}

type ResultV040Interface = NonNullable<ResultV040["interfaces"]>[number];
type ResultV040IP = NonNullable<ResultV040["ips"]>[number];

// ---- decoding ----

const interfaceSchema = t.object("Interface", {
  name: t.string(),
  mac: t.string(),
  mtu: t.int(),
  sandbox: t.string(),
  socketPath: t.string(),
  pciID: t.string(),
});

const ipSchema = t.object("ipConfig", {
  interface: t.int(),
  address: cidrField,
  gateway: ipField,
});

export const v100Schema = t.object("Result", {
  cniVersion: t.string(),
  interfaces: t.array(interfaceSchema),
  ips: t.array(ipSchema),
  routes: t.array(routeSchema),
  dns: dnsSchema,
});

/** A decoded 1.x wire object → the internal shape (the version is checked by the caller). */
export function v100FromWire(w: Infer<typeof v100Schema>): ResultV100 {
  const out: ResultV100 = { cniVersion: w.cniVersion ?? "" };
  const interfaces = dense(w.interfaces);
  if (interfaces?.length) {
    out.interfaces = interfaces.map((i) => {
      const o: Interface = { name: i.name ?? "" };
      if (i.mac) o.mac = i.mac;
      if (i.mtu) o.mtu = i.mtu;
      if (i.sandbox) o.sandbox = i.sandbox;
      if (i.socketPath) o.socketPath = i.socketPath;
      if (i.pciID) o.pciID = i.pciID;
      return o;
    });
  }
  const ips = dense(w.ips);
  if (ips?.length) {
    out.ips = ips.map((ip, n) => {
      if (ip.address === undefined) throw new Error(`ips[${n}]: missing "address"`);
      const o: IPConfig = { address: ip.address };
      if (ip.gateway) o.gateway = ip.gateway;
      if (ip.interface !== undefined) o.interface = ip.interface;
      return o;
    });
  }
  const routes = dense(w.routes);
  if (routes?.length) out.routes = routes.map((r, n) => routeFromWire(r, `routes[${n}]`));
  const dns = dnsFromWire(w.dns);
  if (dns) out.dns = dns;
  return out;
}
