/**
 * Rules of a big shared chain read without decoding each one. On a node with hundreds of pods,
 * POSTROUTING, CNI-FORWARD or CNI-HOSTPORT-DNAT hold a rule or two per pod, and decoding every
 * rule of such a chain (netlink attributes, then iptables arguments) on every call made each pod's
 * ADD and DEL slower with every pod before it. A call only ever asks about its own rules, and each
 * of them carries something unique to it that the kernel keeps verbatim in the rule's bytes (its
 * comment, the chain it jumps to, its container's address): a rule whose bytes lack it is not the
 * rule asked about, and is left undecoded (rule.ts needleOf says what a rule's needle is). So the cost per rule of a listing is one byte search
 * (native), and decoding is paid only for the few rules that might match.
 */
import { containsBytes } from "../../netlink/codec.ts";

/** A rule: argument list in iptables-save order (chain.ts IptRule). */
type IptRule = readonly string[];

/** A rule as the kernel keeps it, decoded (iptables arguments) only when asked. */
export class LazyRule {
  private readonly bytes: Uint8Array;
  private readonly decoder: () => IptRule | undefined;
  private decoded: IptRule | null | undefined;

  /** `bytes`: the rule's kernel form; `decode`: its iptables arguments, undefined when not of a shape that can be read. */
  constructor(bytes: Uint8Array, decode: () => IptRule | undefined) {
    this.bytes = bytes;
    this.decoder = decode;
  }

  /** False when the rule's bytes do not contain `needle`: then it is not a rule whose needle that is. */
  mentions(needle: Uint8Array): boolean {
    return containsBytes(this.bytes, needle);
  }

  /** The rule's arguments (decoded once); undefined when it is of a shape that cannot be read. */
  decode(): IptRule | undefined {
    if (this.decoded === undefined) this.decoded = this.decoder() ?? null;
    return this.decoded ?? undefined;
  }
}

/** A chain as read: rules decoded already, or lazily. */
export type ChainListing = readonly (IptRule | LazyRule)[];
