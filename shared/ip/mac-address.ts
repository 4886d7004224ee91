/**
 * MAC addresses from configs and CNI_ARGS, parsed like Go's `net.ParseMAC` for the 6-byte forms a
 * link can carry (`aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff`, `aabb.ccdd.eeff`), normalised to
 * lower-case colon form. Go's error text is kept: `address <s>: invalid MAC address`. Pure.
 */
/** The normalised MAC, or undefined when `s` is not a 6-byte MAC. */
export function parseMacAddress(s: string): string | undefined {
  let hex: string | undefined;
  if (/^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$/.test(s)) hex = s.replace(/[:-]/g, "");
  else if (/^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$/.test(s)) hex = s.replace(/\./g, "");
  if (hex === undefined) return undefined;
  return hex.toLowerCase().match(/../g)!.join(":");
}

/** Go's `net.ParseMAC` error text for `s`. */
export function invalidMacMessage(s: string): string {
  return `address ${s}: invalid MAC address`;
}
