/**
 * The iptables-save / iptables-restore text format: tokenising rule lines (double quotes with
 * `\"` and `\\` escapes, as iptables-save writes comments), quoting tokens back, and parsing a
 * whole save dump into tables, chains and rules.
 */

/** One table of an iptables-save dump. */
export interface SavedTable {
  readonly name: string;
  /** Chain names in dump order (built-ins first, as iptables-save prints them). */
  chains: string[];
  /** Policy of built-in chains (`ACCEPT`, `DROP`); `-` for user chains. */
  policies: Map<string, string>;
  /** Rule argument lists per chain (without `-A <chain>`), in order. */
  rules: Map<string, string[][]>;
}

export class SaveFormatError extends Error {
  override name = "SaveFormatError";
}

/** Splits one rule line into tokens, honouring double quotes and backslash escapes inside them. */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
    if (i >= line.length) break;
    let tok = "";
    while (i < line.length && line[i] !== " " && line[i] !== "\t") {
      if (line[i] === '"') {
        i++;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === "\\" && i + 1 < line.length && (line[i + 1] === '"' || line[i + 1] === "\\")) i++;
          tok += line[i];
          i++;
        }
        if (i >= line.length) throw new SaveFormatError(`unterminated quote in: ${line}`);
        i++;
      } else {
        tok += line[i];
        i++;
      }
    }
    out.push(tok);
  }
  return out;
}

/** Quotes a token for a restore line when needed (as iptables-save does). */
export function quoteToken(tok: string): string {
  if (tok !== "" && !/[\s"'\\]/.test(tok)) return tok;
  return `"${tok.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A rule line for restore input: `-A CHAIN tok tok…` (`-I CHAIN <position> tok…` with a position). */
export function ruleLine(op: string, chain: string, args: readonly string[], position?: number): string {
  const head = position === undefined ? [op, quoteToken(chain)] : [op, quoteToken(chain), String(position)];
  return [...head, ...args.map(quoteToken)].join(" ");
}

/** Creates an empty table holding the built-in chains of `name` (all policy ACCEPT). */
export function emptyTable(name: string): SavedTable {
  const builtins = BUILTIN_CHAINS[name] ?? [];
  return {
    name,
    chains: [...builtins],
    policies: new Map(builtins.map((c) => [c, "ACCEPT"])),
    rules: new Map(builtins.map((c) => [c, []])),
  };
}

/** Built-in chains per table, in iptables-save order. */
export const BUILTIN_CHAINS: Readonly<Record<string, readonly string[]>> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
  security: ["INPUT", "FORWARD", "OUTPUT"],
};

/** Parses iptables-save output (any number of tables; comments and counters ignored). */
export function parseSave(text: string): Map<string, SavedTable> {
  const tables = new Map<string, SavedTable>();
  let cur: SavedTable | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("*")) {
      cur = { name: line.slice(1), chains: [], policies: new Map(), rules: new Map() };
      tables.set(cur.name, cur);
      continue;
    }
    if (cur === undefined) throw new SaveFormatError(`line outside a table: ${line}`);
    if (line === "COMMIT") {
      cur = undefined;
      continue;
    }
    if (line.startsWith(":")) {
      const [name, policy] = line.slice(1).split(/\s+/);
      if (!name) throw new SaveFormatError(`bad chain line: ${line}`);
      if (!cur.rules.has(name)) {
        cur.chains.push(name);
        cur.rules.set(name, []);
      }
      cur.policies.set(name, policy ?? "-");
      continue;
    }
    const toks = tokenize(line);
    if (toks[0] === "-A" && toks[1] !== undefined) {
      let list = cur.rules.get(toks[1]);
      if (list === undefined) {
        list = [];
        cur.rules.set(toks[1], list);
        cur.chains.push(toks[1]);
        cur.policies.set(toks[1], "-");
      }
      list.push(toks.slice(2));
      continue;
    }
    throw new SaveFormatError(`unexpected line: ${line}`);
  }
  return tables;
}

/** Renders tables in iptables-save format (no header comments, counters `[0:0]`). */
export function renderSave(tables: Iterable<SavedTable>): string {
  const out: string[] = [];
  for (const t of tables) {
    out.push(`*${t.name}`);
    for (const c of t.chains) out.push(`:${c} ${t.policies.get(c) ?? "-"} [0:0]`);
    for (const c of t.chains) for (const r of t.rules.get(c) ?? []) out.push(ruleLine("-A", c, r));
    out.push("COMMIT");
  }
  return out.length ? `${out.join("\n")}\n` : "";
}
