/**
 * The public face of shared/iface/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { checkContainerLink, requirePrevResult, validateExpectedInterfaceIPs, validateExpectedRoutes } from "./check.ts";
export { configureIface } from "./configure.ts";
export { addContainerLink, CONTAINER_LINK_STEP, containerAddressHint, containerInterface, delContainerLink, deleteContainerLink, kernelModeName, lookupMaster, refuseL2ForOldVersions, requireIpam } from "./container-link.ts";
export { enableNeighbourNotify, setSysctlsQuietly } from "./link-sysctls.ts";
export type { CreatedLink } from "./container-link.ts";
export { defaultRouteInterface } from "./default-route.ts";
export { enableIPForward, forwardFamiliesOf } from "./forward.ts";
export { v11InterfaceFields } from "./interface-fields.ts";
export { nodeAddresses } from "./node-addresses.ts";
export { settleIPv6, sleepSync } from "./settle.ts";
export { interfaceStatus, masterStatus } from "./status.ts";
export { setupVeth } from "./veth.ts";
export type { LinkInfo } from "./veth.ts";
