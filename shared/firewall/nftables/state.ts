/**
 * What `listNftTable` returns: one table's chains, rules (with handles and comments), sets and
 * maps, normalised from `nft -j list table` (or from the fake's model), plus the raw JSON objects.
 * Rule bodies are rendered back to nft syntax for the common expressions (see {@link renderExpr}),
 * so callers can compare them with the text they added.
 */
import type { NftFamily } from "./transaction.ts";

export interface NftChainState {
  name: string;
  handle?: number;
  type?: string;
  hook?: string;
  priority?: number | string;
  policy?: string;
  comment?: string;
}

export interface NftRuleState {
  chain: string;
  handle: number;
  /** The rule body in nft syntax, without the comment (single spaces). */
  rule: string;
  comment?: string;
  /** The raw JSON `expr` list (undefined for the fake). */
  expr?: unknown[];
}

export interface NftSetState {
  name: string;
  kind: "set" | "map";
  type: string;
  flags: string[];
  comment?: string;
  /** Elements rendered as nft text (`10.0.0.0/8`, `10.1.1.1 : goto c`). */
  elements: string[];
}

export interface NftTableState {
  family: NftFamily;
  name: string;
  comment?: string;
  chains: NftChainState[];
  rules: NftRuleState[];
  sets: NftSetState[];
  /** The objects of `nft -j` output for this table (empty for the fake). */
  raw: unknown[];
}

/** Collapses runs of whitespace, for comparing rule text. */
export function normalizeRule(rule: string): string {
  return rule.trim().replace(/\s+/g, " ");
}

type J = Record<string, any>;

function renderValue(v: any): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map(renderValue).join(" ");
  if ("prefix" in v) return `${renderValue(v.prefix.addr)}/${v.prefix.len}`;
  if ("range" in v) return `${renderValue(v.range[0])}-${renderValue(v.range[1])}`;
  if ("set" in v) return `{ ${(Array.isArray(v.set) ? v.set : [v.set]).map(renderValue).join(", ")} }`;
  if ("concat" in v) return (v.concat as any[]).map(renderValue).join(" . ");
  if ("payload" in v) return v.payload.protocol !== undefined ? `${v.payload.protocol} ${v.payload.field}` : `@${v.payload.base},${v.payload.offset},${v.payload.len}`;
  if ("meta" in v) return v.meta.key;
  if ("ct" in v) return `ct ${v.ct.key}`;
  if ("elem" in v) return renderValue(v.elem.val);
  for (const verdict of ["jump", "goto"]) if (verdict in v) return `${verdict} ${v[verdict].target}`;
  for (const verdict of ["accept", "drop", "return", "continue"]) if (verdict in v) return verdict;
  return JSON.stringify(v);
}

function renderStatement(s: J): string {
  if ("match" in s) {
    const m = s.match;
    const left = renderValue(m.left);
    let right = renderValue(m.right);
    if (typeof m.right === "string" && m.left && "meta" in m.left && /name$/.test(m.left.meta.key)) right = `"${m.right}"`;
    return `${left} ${m.op === "in" ? "" : `${m.op} `}${right}`.replace(/\s+/g, " ");
  }
  for (const verdict of ["accept", "drop", "return", "continue", "masquerade"]) if (verdict in s && (s[verdict] === null || Object.keys(s[verdict] ?? {}).length === 0)) return verdict;
  for (const verdict of ["jump", "goto"]) if (verdict in s) return `${verdict} ${s[verdict].target}`;
  if ("counter" in s) return "counter";
  if ("snat" in s || "dnat" in s) {
    const kind = "snat" in s ? "snat" : "dnat";
    const x = s[kind];
    const fam = x.family ? `${x.family} ` : "";
    return `${kind} ${fam}to ${renderValue(x.addr)}${x.port !== undefined ? `:${renderValue(x.port)}` : ""}`;
  }
  return JSON.stringify(s);
}

/** nft syntax for a rule's JSON `expr` list (common statements; anything else as JSON). */
export function renderExpr(expr: unknown[]): string {
  return expr.map((s) => renderStatement(s as J)).join(" ");
}

/** Normalises the objects of `nft -j list table <family> <name>`. */
export function tableStateFromJson(family: NftFamily, name: string, objects: unknown[]): NftTableState {
  const state: NftTableState = { family, name, chains: [], rules: [], sets: [], raw: [] };
  for (const o of objects as J[]) {
    if (o.metainfo) continue;
    const body = o.table ?? o.chain ?? o.rule ?? o.set ?? o.map;
    if (!body || body.family !== family || (o.table ? body.name : body.table) !== name) continue;
    state.raw.push(o);
    if (o.table) {
      if (body.comment !== undefined) state.comment = body.comment;
    } else if (o.chain) {
      const c: NftChainState = { name: body.name, handle: body.handle };
      if (body.type !== undefined) c.type = body.type;
      if (body.hook !== undefined) c.hook = body.hook;
      if (body.prio !== undefined) c.priority = body.prio;
      if (body.policy !== undefined) c.policy = body.policy;
      if (body.comment !== undefined) c.comment = body.comment;
      state.chains.push(c);
    } else if (o.rule) {
      const r: NftRuleState = { chain: body.chain, handle: body.handle, rule: renderExpr(body.expr ?? []), expr: body.expr ?? [] };
      if (body.comment !== undefined) r.comment = body.comment;
      state.rules.push(r);
    } else {
      const isMap = Boolean(o.map);
      const elems = (body.elem ?? []) as any[];
      const s: NftSetState = {
        name: body.name,
        kind: isMap ? "map" : "set",
        type: Array.isArray(body.type) ? body.type.join(" . ") : String(body.type),
        flags: body.flags ?? [],
        elements: elems.map((e) => (isMap && Array.isArray(e) ? `${renderValue(e[0])} : ${renderValue(e[1])}` : renderValue(e))),
      };
      if (body.comment !== undefined) s.comment = body.comment;
      state.sets.push(s);
    }
  }
  return state;
}
