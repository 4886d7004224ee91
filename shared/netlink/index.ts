/**
 * rtnetlink for the plugins: open a {@link Handle} on a namespace and call its methods.
 * Constants live in ./constants/*.ts (kernel names verbatim).
 */
export { Handle } from "./handle.ts";
export { NetlinkError, NetlinkDumpInterruptedError, LinkNotFoundError, isNotFound, isExists } from "./errors.ts";
export { NetlinkSocket } from "./socket.ts";
export type { Link } from "./link.ts";
export type {
  VethOptions,
  BridgeOptions,
  MacvlanOptions,
  MacvlanMode,
  IpvlanOptions,
  IpvlanMode,
  IpvlanFlag,
  VlanOptions,
  DummyOptions,
  IfbOptions,
  LinkCommonOptions,
} from "./link-add.ts";
export type { Addr, AddrSpec, AddrFilter } from "./addr.ts";
export type { RouteSpec, RouteEntry, RouteFilter, RoutePrefix, RouteNexthop } from "./route.ts";
