/**
 * An nf_tables rule as the kernel reports it (nftables.ts reads them; the firewall backends find
 * and delete rules by them): types alone, so that a reader of rules names them without loading
 * the netlink code.
 */

/** One rule of a chain as far as finding and deleting it goes. */
export interface NftRuleRef {
  chain: string;
  /** The rule's handle (unique in its table for the table's lifetime). */
  handle: number;
  /** The rule's comment (user data), when it has one. */
  comment?: string;
  /** The chain the rule's verdict jumps or goes to (`jump X`, iptables' `-j X`), when it has one. */
  jump?: string;
}

/** One expression of a rule: its name (`payload`, `cmp`, `match`, `immediate`, …) and its NFTA_<NAME>_* attributes. */
export interface NftExpr {
  name: string;
  attrs: ReadonlyMap<number, Uint8Array>;
}

/** A rule with its expressions, in order (what `nft --debug=netlink list chain` prints). */
export interface NftRule extends NftRuleRef {
  expressions: readonly NftExpr[];
}
