/**
 * The public face of shared/ip/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { bitLength, compareIP, formatIP, ipEqual, ipFromBytes, ipToBytes, isGlobalUnicast, makeIP, nextIP, parseIP, prevIP } from "./addr.ts";
export type { IPAddr, IPFamily } from "./addr.ts";
export { containsIP, formatCIDR, isNetworkAddress, lastAddress, maskBits, maskToPrefix, networkAddress, parseCIDR, parseCIDRDetailed } from "./cidr.ts";
export type { CIDR, ParsedCIDR } from "./cidr.ts";
export { invalidMacMessage, isValidEtherAddr, parseHardwareAddr, parseMacAddress } from "./mac-address.ts";
