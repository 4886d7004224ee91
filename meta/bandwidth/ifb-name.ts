/**
 * IFB device names. Upstream: `bwp` + the first 12 hex digits of sha512(network name +
 * container ID) (15 characters, IFNAMSIZ-1), kept for interop with the Go plugin. Beyond upstream,
 * a second interface of the same pod on the same network gets a name that also hashes the
 * interface name, and every IFB we create carries an alias naming its owner so DEL/CHECK pick the
 * right one and GC can tell which attachment of which network an IFB was made for.
 */
const PREFIX = "bwp";
const MAX_LEN = 15;

function hashName(input: string): string {
  const hex = new Bun.CryptoHasher("sha512").update(input).digest("hex");
  return PREFIX + hex.slice(0, MAX_LEN - PREFIX.length);
}

/** Upstream getIfbDeviceName(network, containerID). */
export function upstreamIfbName(network: string, containerID: string): string {
  return hashName(network + containerID);
}

/** The name for a further interface of the same pod and network. */
export function derivedIfbName(network: string, containerID: string, ifName: string): string {
  return hashName(`${network}\n${containerID}\n${ifName}`);
}

const ALIAS_PREFIX = "cni-bandwidth";

/** The IFLA_IFALIAS our IFBs carry: who they shape. */
export function ifbAlias(containerID: string, ifName: string): string {
  return `${ALIAS_PREFIX} ${containerID} ${ifName}`;
}

/**
 * Whether an existing IFB (by its alias) belongs to (containerID, ifName). An IFB without our
 * alias (made by the Go plugin, which uses only the upstream name) counts as belonging to whoever
 * asks, as upstream assumes.
 */
export function ifbBelongsTo(alias: string | undefined, containerID: string, ifName: string): boolean {
  if (alias === undefined || !alias.startsWith(`${ALIAS_PREFIX} `)) return true;
  return alias === ifbAlias(containerID, ifName);
}

/** The attachment named by one of our aliases; undefined for any other alias (or none: a Go IFB). */
export function ifbOwner(alias: string | undefined): { containerID: string; ifName: string } | undefined {
  if (alias === undefined || !alias.startsWith(`${ALIAS_PREFIX} `)) return undefined;
  const rest = alias.slice(ALIAS_PREFIX.length + 1);
  const cut = rest.lastIndexOf(" ");
  if (cut <= 0 || cut === rest.length - 1) return undefined;
  return { containerID: rest.slice(0, cut), ifName: rest.slice(cut + 1) };
}

/**
 * The attachment of `network` an IFB of ours was made for: its alias names the attachment and its
 * name is the one this network gives that attachment (upstream or derived). Undefined for an IFB of
 * another network, and for one without our alias (the Go plugin's), which cannot be attributed.
 */
export function ifbAttachment(ifb: { name: string; alias?: string | undefined }, network: string): { containerID: string; ifName: string } | undefined {
  const owner = ifbOwner(ifb.alias);
  if (owner === undefined) return undefined;
  const names = [upstreamIfbName(network, owner.containerID), derivedIfbName(network, owner.containerID, owner.ifName)];
  return names.includes(ifb.name) ? owner : undefined;
}
