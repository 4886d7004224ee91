/**
 * The public face of shared/node-state/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { namesIn, NetworkState } from "./network-state.ts";
export type { Holding, HostReaders, NetworkConfigList, SeenAttachment } from "./network-state.ts";
export { ipamOf } from "./ownership.ts";
export type { PluginOwnership, PluginOwnerships, StatePhase } from "./ownership.ts";
