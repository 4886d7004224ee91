/**
 * rtnetlink for the plugins: open a {@link Handle} on a namespace and call its methods.
 * Constants live in ./constants/*.ts (kernel names verbatim); tc handles and u32 match keys in
 * ./tc/msg.ts and ./tc/u32-match.ts.
 */
export { Handle } from "./handle.ts";
export { NetlinkError, NetlinkDumpInterruptedError, LinkNotFoundError, isNotFound, isExists } from "./errors.ts";
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
  VrfOptions,
  DummyOptions,
  IfbOptions,
  LinkCommonOptions,
} from "./link-add.ts";
export type { BridgeChange } from "./link-set.ts";
export type { BridgeVlanSpec, BridgeVlanEntry } from "./bridge-vlan.ts";
export type { Addr, AddrSpec, AddrFilter } from "./addr.ts";
export { routeSpecOf } from "./route.ts";
export type { RouteSpec, RouteEntry, RouteFilter, RoutePrefix, RouteNexthop } from "./route.ts";
export { ruleSpecOf } from "./rule.ts";
export type { RuleSpec, RuleEntry } from "./rule.ts";
export type { Qdisc, QdiscOp, TbfSpec } from "./tc/qdisc.ts";
export type { HtbQdiscSpec, HtbClassSpec, TcClass } from "./tc/htb.ts";
export type { Filter, U32FilterSpec, U32Key } from "./tc/filter.ts";
