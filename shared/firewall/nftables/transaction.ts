/**
 * A small typed nftables transaction builder (the knftables idea): operations on one table,
 * rendered to `nft -f -` text and applied atomically in one `nft` run (see driver.ts), or to the
 * in-memory model in fake.ts.
 *
 * Rendering follows knftables' text, e.g.
 *   add table inet t { comment "…" ; }
 *   add chain inet t postrouting { type nat hook postrouting priority 100 ; }
 *   add rule inet t masq_checks ip saddr == 10.0.0.2 masquerade comment "…"
 *   delete rule inet t masq_checks handle 7
 */

import type { NftFamilyName } from "../../netlink/constants/nf-tables.ts";

export type NftFamily = NftFamilyName;
export type NftVerb = "add" | "create" | "insert" | "flush" | "delete";

export interface NftTableSpec {
  comment?: string;
}

export interface NftChainSpec {
  name: string;
  /** Base chains only: `filter`, `nat`, `route`. */
  type?: string;
  /** Base chains only: `prerouting`, `input`, `forward`, `output`, `postrouting`, `ingress`. */
  hook?: string;
  /** Base chains only: a number or a standard name (`srcnat`, `dstnat`, `filter`, …). */
  priority?: number | string;
  /** netdev ingress chains. */
  device?: string;
  policy?: "accept" | "drop";
  comment?: string;
}

export interface NftRuleSpec {
  chain: string;
  /** The rule body in nft syntax, without the comment. */
  rule: string;
  comment?: string;
}

export interface NftSetSpec {
  name: string;
  /** Key type (`ipv4_addr`, `ipv4_addr . inet_service`, …). */
  type: string;
  flags?: readonly string[];
  comment?: string;
}

export interface NftMapSpec extends NftSetSpec {
  /** Value type (`verdict`, `ipv4_addr`, …). */
  valueType: string;
}

export interface NftElementSpec {
  /** The set or map holding the element. */
  set: string;
  key: string;
  /** Map elements only. */
  value?: string;
  comment?: string;
}

export type NftOp =
  | { verb: "add" | "flush" | "delete"; kind: "table"; spec: NftTableSpec }
  | { verb: "add" | "create"; kind: "chain"; spec: NftChainSpec }
  | { verb: "flush" | "delete"; kind: "chain"; name: string }
  | { verb: "add" | "insert"; kind: "rule"; spec: NftRuleSpec }
  | { verb: "delete"; kind: "rule"; chain: string; handle: number }
  | { verb: "add"; kind: "set"; spec: NftSetSpec }
  | { verb: "add"; kind: "map"; spec: NftMapSpec }
  | { verb: "flush" | "delete"; kind: "set" | "map"; name: string }
  | { verb: "add" | "delete"; kind: "element"; spec: NftElementSpec; map: boolean };

export class NftSyntaxError extends Error {
  override name = "NftSyntaxError";
}

/** Comments are double-quoted with no escape mechanism in nft: a `"` cannot be represented. */
function quoteComment(comment: string): string {
  if (comment.includes('"') || comment.includes("\n")) throw new NftSyntaxError(`nft comment cannot contain quotes or newlines: ${comment}`);
  return `"${comment}"`;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_./\-]*$/;
function checkName(what: string, name: string): string {
  if (!NAME.test(name)) throw new NftSyntaxError(`invalid nft ${what} name ${JSON.stringify(name)}`);
  return name;
}

/** One transaction on one table. */
export class NftTransaction {
  readonly family: NftFamily;
  readonly table: string;
  private readonly list: NftOp[] = [];

  constructor(family: NftFamily, table: string) {
    this.family = family;
    this.table = checkName("table", table);
  }

  get ops(): readonly NftOp[] {
    return this.list;
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  addTable(spec: NftTableSpec = {}): this {
    return this.push({ verb: "add", kind: "table", spec });
  }
  flushTable(): this {
    return this.push({ verb: "flush", kind: "table", spec: {} });
  }
  deleteTable(): this {
    return this.push({ verb: "delete", kind: "table", spec: {} });
  }
  /** `add chain` (no error when it exists); a base chain when `type`/`hook`/`priority` are set. */
  addChain(spec: NftChainSpec): this {
    checkName("chain", spec.name);
    const base = [spec.type, spec.hook, spec.priority].filter((x) => x !== undefined).length;
    if (base !== 0 && base !== 3) throw new NftSyntaxError(`base chain ${spec.name} needs type, hook and priority together`);
    return this.push({ verb: "add", kind: "chain", spec });
  }
  /** `create chain`: fails when the chain exists. */
  createChain(spec: NftChainSpec): this {
    checkName("chain", spec.name);
    return this.push({ verb: "create", kind: "chain", spec });
  }
  flushChain(name: string): this {
    return this.push({ verb: "flush", kind: "chain", name: checkName("chain", name) });
  }
  deleteChain(name: string): this {
    return this.push({ verb: "delete", kind: "chain", name: checkName("chain", name) });
  }
  /** Appends a rule to its chain. */
  addRule(spec: NftRuleSpec): this {
    checkName("chain", spec.chain);
    if (spec.comment !== undefined) quoteComment(spec.comment);
    return this.push({ verb: "add", kind: "rule", spec });
  }
  /** Prepends a rule to its chain. */
  insertRule(spec: NftRuleSpec): this {
    checkName("chain", spec.chain);
    if (spec.comment !== undefined) quoteComment(spec.comment);
    return this.push({ verb: "insert", kind: "rule", spec });
  }
  /** Deletes a rule by its handle (from {@link listNftTable}). */
  deleteRule(chain: string, handle: number): this {
    if (!Number.isInteger(handle) || handle <= 0) throw new NftSyntaxError(`invalid rule handle ${handle}`);
    return this.push({ verb: "delete", kind: "rule", chain: checkName("chain", chain), handle });
  }
  addSet(spec: NftSetSpec): this {
    checkName("set", spec.name);
    return this.push({ verb: "add", kind: "set", spec });
  }
  addMap(spec: NftMapSpec): this {
    checkName("map", spec.name);
    return this.push({ verb: "add", kind: "map", spec });
  }
  flushSet(name: string): this {
    return this.push({ verb: "flush", kind: "set", name: checkName("set", name) });
  }
  deleteSet(name: string): this {
    return this.push({ verb: "delete", kind: "set", name: checkName("set", name) });
  }
  flushMap(name: string): this {
    return this.push({ verb: "flush", kind: "map", name: checkName("map", name) });
  }
  deleteMap(name: string): this {
    return this.push({ verb: "delete", kind: "map", name: checkName("map", name) });
  }
  addElement(spec: NftElementSpec): this {
    checkName("set", spec.set);
    return this.push({ verb: "add", kind: "element", spec, map: spec.value !== undefined });
  }
  deleteElement(spec: NftElementSpec): this {
    checkName("set", spec.set);
    return this.push({ verb: "delete", kind: "element", spec, map: spec.value !== undefined });
  }

  /** The `nft -f -` script, one operation per line. */
  render(): string {
    return this.list.map((op) => renderOp(this.family, this.table, op) + "\n").join("");
  }

  private push(op: NftOp): this {
    this.list.push(op);
    return this;
  }
}

/** `{ type nat hook postrouting priority 100 ; policy accept ; comment "…" ; }` (or "" for a bare chain). */
export function chainBody(spec: NftChainSpec): string {
  const parts: string[] = [];
  if (spec.type !== undefined && spec.hook !== undefined && spec.priority !== undefined) {
    const dev = spec.device !== undefined ? ` device "${spec.device}"` : "";
    parts.push(`type ${spec.type} hook ${spec.hook}${dev} priority ${spec.priority} ;`);
  }
  if (spec.policy !== undefined) parts.push(`policy ${spec.policy} ;`);
  if (spec.comment !== undefined) parts.push(`comment ${quoteComment(spec.comment)} ;`);
  return parts.length ? ` { ${parts.join(" ")} }` : "";
}

export function setBody(spec: NftSetSpec | NftMapSpec): string {
  const parts: string[] = [];
  parts.push("valueType" in spec ? `type ${spec.type} : ${spec.valueType} ;` : `type ${spec.type} ;`);
  if (spec.flags?.length) parts.push(`flags ${spec.flags.join(",")} ;`);
  if (spec.comment !== undefined) parts.push(`comment ${quoteComment(spec.comment)} ;`);
  return ` { ${parts.join(" ")} }`;
}

export function ruleText(spec: NftRuleSpec): string {
  return spec.comment === undefined ? spec.rule : `${spec.rule} comment ${quoteComment(spec.comment)}`;
}

export function elementText(spec: NftElementSpec, withComment: boolean): string {
  const kv = spec.value === undefined ? spec.key : `${spec.key} : ${spec.value}`;
  return withComment && spec.comment !== undefined ? `${kv} comment ${quoteComment(spec.comment)}` : kv;
}

export function renderOp(family: NftFamily, table: string, op: NftOp): string {
  const t = `${family} ${table}`;
  switch (op.kind) {
    case "table":
      return op.verb === "add" && op.spec.comment !== undefined
        ? `add table ${t} { comment ${quoteComment(op.spec.comment)} ; }`
        : `${op.verb} table ${t}`;
    case "chain":
      return "spec" in op ? `${op.verb} chain ${t} ${op.spec.name}${chainBody(op.spec)}` : `${op.verb} chain ${t} ${op.name}`;
    case "rule":
      return op.verb === "delete"
        ? `delete rule ${t} ${op.chain} handle ${op.handle}`
        : `${op.verb} rule ${t} ${op.spec.chain} ${ruleText(op.spec)}`;
    case "set":
    case "map":
      return "spec" in op ? `add ${op.kind} ${t} ${op.spec.name}${setBody(op.spec)}` : `${op.verb} ${op.kind} ${t} ${op.name}`;
    case "element":
      return `${op.verb} element ${t} ${op.spec.set} { ${elementText(op.spec, op.verb === "add")} }`;
  }
}
