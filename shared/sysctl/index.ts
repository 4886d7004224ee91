/**
 * The public face of shared/sysctl/: synchronous /proc/sys access (usable inside withNetNS). Every
 * file not re-exported here is private to the package (build/lint-layers.ts).
 */
export { sysctlGet, sysctlSet, sysctlPath, SysctlNameError, type SysctlOptions } from "./sysctl.ts";
