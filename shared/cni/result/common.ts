/**
 * Pieces every result version shares: routes and DNS (upstream `types.Route`, `types.DNS`), their
 * JSON writers in Go field order with Go's `omitempty` rules, their decoders, and copies.
 */
import { t, type Infer } from "../decode.ts";
import type { DNS, Route } from "../types.ts";
import { canonicalCIDR, canonicalIP } from "./ip-text.ts";

/** Result wire versions, by the family each belongs to (`resultFamily`). */
export const FAMILY_VERSIONS = {
  "020": ["", "0.1.0", "0.2.0"],
  "040": ["0.3.0", "0.3.1", "0.4.0"],
  "100": ["1.0.0", "1.1.0"],
} as const;

/** A route in Go struct order: `dst, gw, mtu, advmss, priority, table, scope` (zero ints omitted). */
export function routeJson(r: Route): Record<string, unknown> {
  return {
    dst: canonicalCIDR(r.dst).text,
    gw: nonEmpty(r.gw) === undefined ? undefined : canonicalIP(r.gw!),
    mtu: nonZero(r.mtu),
    advmss: nonZero(r.advmss),
    priority: nonZero(r.priority),
    table: r.table,
    scope: r.scope,
  };
}

/** DNS in Go struct order: `nameservers, domain, search, options`, each omitted when empty. */
export function dnsJson(d: DNS | undefined): Record<string, unknown> {
  if (d === undefined) return {};
  return {
    nameservers: nonEmptyList(d.nameservers),
    domain: nonEmpty(d.domain),
    search: nonEmptyList(d.search),
    options: nonEmptyList(d.options),
  };
}

/** Upstream `DNS.IsEmpty`. */
export function dnsIsEmpty(d: DNS | undefined): boolean {
  return (
    d === undefined ||
    ((d.nameservers?.length ?? 0) === 0 && (d.domain ?? "") === "" && (d.search?.length ?? 0) === 0 && (d.options?.length ?? 0) === 0)
  );
}

export function copyRoute(r: Route): Route {
  return { ...r };
}

/** A DNS copy without empty members (so results compare and print the same however they were built). */
export function copyDns(d: DNS | undefined): DNS | undefined {
  if (dnsIsEmpty(d)) return undefined;
  const out: DNS = {};
  if (d!.nameservers?.length) out.nameservers = [...d!.nameservers];
  if (d!.domain) out.domain = d!.domain;
  if (d!.search?.length) out.search = [...d!.search];
  if (d!.options?.length) out.options = [...d!.options];
  return out;
}

export function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === "" ? undefined : s;
}

export function nonZero(n: number | undefined): number | undefined {
  return n === undefined || n === 0 ? undefined : n;
}

export function nonEmptyList<T>(list: readonly T[] | undefined): T[] | undefined {
  return list === undefined || list.length === 0 ? undefined : [...list];
}

/** Drops `null` elements (Go would keep nil pointers and crash on them later). */
export function dense<T>(list: readonly (T | undefined)[] | undefined): T[] | undefined {
  if (list === undefined) return undefined;
  return list.filter((x): x is T => x !== undefined && x !== null);
}

// ---- decoding schemas (Go field names; IP fields validated and canonicalised like net.IP/IPNet) ----

/** `types.IPNet`: a CIDR with the host bits kept. */
export const cidrField = t.parsed("types.IPNet", (s) => canonicalCIDR(s).text);

/** `net.IP`: the empty string means "unset". */
export const ipField = t.parsed("net.IP", (s) => (s === "" ? "" : canonicalIP(s)));

export const routeSchema = t.object("types.Route", {
  dst: cidrField,
  gw: ipField,
  mtu: t.int(),
  advmss: t.int(),
  priority: t.int(),
  table: t.int(),
  scope: t.int(),
});

export const dnsSchema = t.object("types.DNS", {
  nameservers: t.array(t.string()),
  domain: t.string(),
  search: t.array(t.string()),
  options: t.array(t.string()),
});

/** A decoded route (wire shape) → the internal Route; a missing `dst` is rejected. */
export function routeFromWire(r: Infer<typeof routeSchema>, where: string): Route {
  if (r.dst === undefined) throw new Error(`${where}: missing "dst"`);
  const out: Route = { dst: r.dst };
  if (r.gw) out.gw = r.gw;
  if (r.mtu !== undefined) out.mtu = r.mtu;
  if (r.advmss !== undefined) out.advmss = r.advmss;
  if (r.priority !== undefined) out.priority = r.priority;
  if (r.table !== undefined) out.table = r.table;
  if (r.scope !== undefined) out.scope = r.scope;
  return out;
}

export function dnsFromWire(d: Infer<typeof dnsSchema> | undefined): DNS | undefined {
  if (d === undefined) return undefined;
  return copyDns({
    ...(d.nameservers ? { nameservers: dense(d.nameservers)! } : {}),
    ...(d.domain !== undefined ? { domain: d.domain } : {}),
    ...(d.search ? { search: dense(d.search)! } : {}),
    ...(d.options ? { options: dense(d.options)! } : {}),
  });
}
