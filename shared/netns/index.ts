/**
 * The public face of shared/netns/: open/validate a netns path and run synchronous code inside it.
 * Every file not re-exported here is private to the package; other packages import the modules named here, never this file (build/lint-layers.ts).
 */
export { NetnsError, NetnsNotFoundError, NotANetnsError } from "./errors.ts";
export { NetNS, checkNetnsPath, isSameNetNS } from "./netns.ts";
export { withNetNS, type NotThenable } from "./enter.ts";
export { createTempNetNS } from "./temp.ts";
