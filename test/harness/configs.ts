/** Network configuration builders for the IPAM plugins under test. */

export interface HostLocalOptions {
  name?: string;
  cniVersion?: string | undefined;
  dataDir: string;
  /** Range sets; default one IPv4 /24 (10.1.2.0/24). */
  ranges?: Record<string, unknown>[][];
  routes?: Record<string, unknown>[];
  /** Extra keys under `ipam`. */
  ipam?: Record<string, unknown>;
  /** Extra top-level keys (args, runtimeConfig, prevResult, cni.dev/valid-attachments, ...). */
  top?: Record<string, unknown>;
}

/** A host-local config run directly (type host-local, its settings under `ipam`, as upstream tests do). */
export function hostLocalConfig(o: HostLocalOptions): Record<string, unknown> {
  const conf: Record<string, unknown> = { name: o.name ?? "hl-net", type: "host-local" };
  if (o.cniVersion !== undefined) conf.cniVersion = o.cniVersion;
  conf.ipam = {
    type: "host-local",
    dataDir: o.dataDir,
    ranges: o.ranges ?? [[{ subnet: "10.1.2.0/24" }]],
    ...(o.routes ? { routes: o.routes } : {}),
    ...(o.ipam ?? {}),
  };
  return { ...conf, ...(o.top ?? {}) };
}

export interface StaticOptions {
  name?: string;
  cniVersion?: string | undefined;
  addresses?: Record<string, unknown>[];
  routes?: Record<string, unknown>[];
  dns?: Record<string, unknown>;
  ipam?: Record<string, unknown>;
  top?: Record<string, unknown>;
}

export function staticConfig(o: StaticOptions = {}): Record<string, unknown> {
  const conf: Record<string, unknown> = { name: o.name ?? "static-net", type: "static" };
  if (o.cniVersion !== undefined) conf.cniVersion = o.cniVersion;
  const ipam: Record<string, unknown> = { type: "static" };
  if (o.addresses) ipam.addresses = o.addresses;
  if (o.routes) ipam.routes = o.routes;
  if (o.dns) ipam.dns = o.dns;
  conf.ipam = { ...ipam, ...(o.ipam ?? {}) };
  return { ...conf, ...(o.top ?? {}) };
}
