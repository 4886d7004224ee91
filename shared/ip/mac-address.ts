/**
 * Hardware addresses parsed like Go's `net.ParseMAC`: `aa:bb:…`, `aa-bb-…` (one separator
 * throughout) or `aabb.ccdd.…`, normalised to lower-case colon form. {@link parseHardwareAddr}
 * takes every length Go does (6, 8 or 20 bytes: EUI-48, EUI-64, IPoIB); {@link parseMacAddress}
 * only the 6 bytes an Ethernet link can carry. Go's error text is kept: `address <s>: invalid MAC
 * address`. Pure.
 */

/** Byte counts Go's net.ParseMAC accepts. */
const HARDWARE_ADDR_LENGTHS = [6, 8, 20];

/** The normalised address, or undefined when `s` is not one of Go's net.ParseMAC forms. */
export function parseHardwareAddr(s: string): string | undefined {
  let bytes: string[];
  if (/^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4})+$/.test(s)) {
    bytes = s.split(".").flatMap((g) => [g.slice(0, 2), g.slice(2)]);
  } else if (/^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2})*$/.test(s)) {
    bytes = s.split(s[2]!);
  } else {
    return undefined;
  }
  if (!HARDWARE_ADDR_LENGTHS.includes(bytes.length)) return undefined;
  return bytes.join(":").toLowerCase();
}

/** The normalised MAC, or undefined when `s` is not a 6-byte MAC. */
export function parseMacAddress(s: string): string | undefined {
  const addr = parseHardwareAddr(s);
  return addr !== undefined && addr.length === 17 ? addr : undefined;
}

/** Go's `net.ParseMAC` error text for `s`. */
export function invalidMacMessage(s: string): string {
  return `address ${s}: invalid MAC address`;
}

/**
 * The kernel's `is_valid_ether_addr` (include/linux/etherdevice.h): a 6-byte address that is neither
 * all zeros nor multicast. Only such an address can be set on an Ethernet-like link.
 */
export function isValidEtherAddr(s: string): boolean {
  const mac = parseMacAddress(s);
  if (mac === undefined || mac === "00:00:00:00:00:00") return false;
  return (parseInt(mac.slice(0, 2), 16) & 1) === 0;
}
