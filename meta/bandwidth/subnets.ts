/**
 * `unshapedSubnets` / `shapedSubnets`: an opt-in extension choosing which remote prefixes the
 * limits apply to (issue 5). Upstream merged the same two keys in v1.5.0 (PR #921) and reverted
 * them in v1.6.0 (PR #1105); they are not at upstream HEAD. We keep the key names and the
 * validation messages of that release, and fix its semantics:
 *
 * - the prefixes name the container's remote peers: for egress (from the container) they match
 *   the destination address, for ingress (towards the container) the source address (upstream
 *   v1.5 matched the destination in both directions, i.e. the container's own address on ingress);
 * - `unshapedSubnets`: traffic with these peers is not limited, everything else is;
 *   `shapedSubnets`: only traffic with these peers is limited. Both at once: code 7.
 */
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { ipToBytes } from "../../shared/ip/addr.ts";
import { parseCIDR } from "../../shared/ip/cidr.ts";

/** One prefix: the address bytes (4 or 16, network order) and the prefix length. */
export interface Prefix {
  text: string;
  bytes: Uint8Array;
  prefixLen: number;
}

/** The lists in force: `mode` says what the listed prefixes are. */
export interface SubnetSelection {
  mode: "unshaped" | "shaped";
  prefixes: Prefix[];
}

function parsePrefix(text: string): Prefix {
  const c = parseCIDR(text);
  if (c === null) throw new InvalidConfigError(`bad subnet ${JSON.stringify(text)} provided, details invalid CIDR address: ${text}`);
  return { text, bytes: ipToBytes(c.ip), prefixLen: c.prefixLen };
}

/** Upstream v1.5 validateSubnets, same messages; `undefined` when both lists are empty. */
export function parseSubnetLists(unshaped: readonly string[], shaped: readonly string[]): SubnetSelection | undefined {
  if (unshaped.length > 0 && shaped.length > 0) {
    throw new InvalidConfigError("unshapedSubnets and shapedSubnets cannot be both specified, one of them should be discarded");
  }
  if (unshaped.length > 0) return { mode: "unshaped", prefixes: unshaped.map(parsePrefix) };
  if (shaped.length > 0) return { mode: "shaped", prefixes: shaped.map(parsePrefix) };
  return undefined;
}
