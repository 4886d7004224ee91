/**
 * Names of host-side links the plugins create (upstream `ip.RandomVethName`): `veth` followed by 8
 * lower-case hex characters from 4 random bytes, e.g. `veth1a2b3c4d` (12 characters, well under
 * IFNAMSIZ).
 */
/** Prefix of every randomly named host-side veth. */
export const VETH_NAME_PREFIX = "veth";

/** `veth` + 8 random lower-case hex characters. */
export function randomVethName(): string {
  // Web Crypto (built in): node:crypto would cost ~10 ms and 8 MB of start-up (docs/performance.md).
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return VETH_NAME_PREFIX + hex;
}
