/**
 * The public face of shared/netlink/, rtnetlink for the plugins: open a {@link Handle} on a
 * namespace and call its methods. Constants (kernel names verbatim), tc handles and u32 match keys
 * are re-exported from their files below. Every file not re-exported here is private to the package
 * (build/lint-layers.ts).
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
export type { Qdisc, TbfSpec } from "./tc/qdisc.ts";
export type { QdiscOp } from "./tc/msg.ts";
export type { HtbQdiscSpec, HtbClassSpec, TcClass } from "./tc/htb.ts";
export type { Filter, U32FilterSpec, U32Key } from "./tc/filter.ts";
export { attrMap, containsBytes, readBe32, readString, readU16, readU32 } from "./codec.ts";
export { IFA_F_DADFAILED, IFA_F_NODAD, IFA_F_TENTATIVE } from "./constants/if-addr.ts";
export { IF_OPER_UNKNOWN, IF_OPER_UP, IFF_ALLMULTI, IFF_LOOPBACK, IFF_PROMISC, IFF_UP, IPVLAN_MODE_L2, IPVLAN_MODE_L3, IPVLAN_MODE_L3S } from "./constants/if-link.ts";
export { NF_ACCEPT, NF_DROP, NFT_CMP_EQ, NFT_CMP_NEQ, NFT_GOTO, NFT_JUMP, NFT_PAYLOAD_NETWORK_HEADER, NFT_RETURN, NFTA_CMP_DATA, NFTA_CMP_OP, NFTA_CMP_SREG, NFTA_DATA_VALUE, NFTA_MATCH_INFO, NFTA_MATCH_NAME, NFTA_MATCH_REV, NFTA_PAYLOAD_BASE, NFTA_PAYLOAD_DREG, NFTA_PAYLOAD_LEN, NFTA_PAYLOAD_OFFSET, NFTA_META_DREG, NFTA_META_KEY, NFT_META_L4PROTO, NFT_META_MARK, NFTA_BITWISE_DREG, NFTA_BITWISE_LEN, NFTA_BITWISE_MASK, NFTA_BITWISE_OP, NFTA_BITWISE_SREG, NFTA_BITWISE_XOR, NFT_BITWISE_BOOL, NFTA_TARGET_INFO, NFTA_TARGET_NAME, NFTA_TARGET_REV } from "./constants/nf-tables.ts";
export { IPPROTO_UDP } from "./constants/nfnetlink-conntrack.ts";
export { NETLINK_NETFILTER } from "./constants/nfnetlink.ts";
export { ETH_P_ALL, ETH_P_IP, ETH_P_IPV6 } from "./constants/pkt-cls.ts";
export { TC_H_MIN_INGRESS, TC_H_ROOT } from "./constants/pkt-sched.ts";
export { RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN, RT_TABLE_UNSPEC } from "./constants/rtnetlink.ts";
export { TCA_EGRESS_REDIR } from "./constants/tc-act.ts";
export { MACVLAN_MODE_BY_NAME } from "./link-add.ts";
export { linkNameProblem } from "./link-name.ts";
export { deferNetfilterReleases, holdRelease } from "./netfilter-release.ts";
export { conntrackDelete, conntrackList } from "./nfnetlink-conntrack.ts";
export { NftEventSocket, parseNftChanges } from "./nftables-events.ts";
export type { NftDeletion } from "./nftables-events.ts";
export { immediateVerdict, isNftablesMissing, nftChainExists, nftDeleteRulesWhere, nftRemoveChains, nftRuleList, nftRulePayloads, nftRules, parseChainRule, nftRulesDelete, nftTableExists } from "./nftables.ts";
export type { ChainRemoval } from "./nftables.ts";
export type { NftExpr, NftRule, NftRuleRef } from "./nftables-rule.ts";
export type { NftFamilyName } from "./constants/nf-tables.ts";
export type { NetlinkSocket } from "./socket.ts";
export { openNetlinkSocket } from "./kernel-transport.ts";
export { parseHtbDefaultClass } from "./tc/htb.ts";
export { formatTcHandle, tcHandle } from "./tc/msg.ts";
export { INGRESS_HANDLE } from "./tc/qdisc.ts";
export { pschedTickInUsec } from "./tc/rate-table.ts";
export { u32PrefixKeys } from "./tc/u32-match.ts";
export { tapAdd } from "./tuntap.ts";
