/** Network namespaces: open/validate a netns path and run synchronous code inside it. */
export { NetnsError, NetnsNotFoundError, NotANetnsError } from "./errors.ts";
export { NetNS, THREAD_NETNS_PATH, checkNetnsPath, isSameNetNS } from "./netns.ts";
export { withNetNS, type NotThenable } from "./enter.ts";
export { createTempNetNS } from "./temp.ts";
