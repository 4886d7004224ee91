/** Synchronous /proc/sys access (usable inside withNetNS). */
export { sysctlGet, sysctlSet, sysctlPath, SysctlNameError, type SysctlOptions } from "./sysctl.ts";
