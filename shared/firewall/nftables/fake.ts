/**
 * In-memory nftables for tests (the knftables `Fake` idea): transactions are applied atomically
 * to a model with nft's main failure modes (missing table/chain/rule/set → "No such file or
 * directory", deleting a non-empty or referenced chain → "Device or resource busy", a jump to a
 * missing chain), and {@link FakeNft.dump} prints the whole ruleset as canonical `add …` lines
 * (tables, then per table: chains, sets, maps sorted by name; rules chain by chain; elements),
 * the same text as knftables' `Fake.Dump()`, for golden tests.
 */
import { CommandError } from "../exec.ts";
import type { NftDriver } from "./driver.ts";
import type { NftTableState } from "./state.ts";
import type { NftRuleRef } from "../../netlink/nftables-rule.ts";
import {
  chainBody,
  elementText,
  ruleText,
  setBody,
  type NftChainSpec,
  type NftElementSpec,
  type NftFamily,
  type NftMapSpec,
  type NftOp,
  type NftSetSpec,
  type NftTransaction,
} from "./transaction.ts";

interface FakeRule {
  handle: number;
  rule: string;
  comment?: string;
}
interface FakeChain {
  spec: NftChainSpec;
  rules: FakeRule[];
}
interface FakeSet {
  kind: "set" | "map";
  spec: NftSetSpec | NftMapSpec;
  elements: Map<string, NftElementSpec>;
}
interface FakeTable {
  family: NftFamily;
  name: string;
  comment?: string;
  chains: Map<string, FakeChain>;
  sets: Map<string, FakeSet>;
  nextHandle: number;
}

const byName = <T>(m: Map<string, T>): [string, T][] => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

export class FakeNft implements NftDriver {
  private tables = new Map<string, FakeTable>();
  /** Rendered text of every transaction run (or attempted), in order. */
  readonly transactions: string[] = [];
  installed = true;
  /** When set, the next run fails with this stderr (then clears itself). */
  failNextRun: string | undefined;

  available(): boolean {
    return this.installed;
  }

  run(tx: NftTransaction): void {
    if (tx.empty) return;
    const text = tx.render();
    this.transactions.push(text);
    const fail = (why: string, op?: NftOp): never => {
      throw new CommandError(["nft", "-f", "-"], 1, `Error: ${why}${op ? `\n${JSON.stringify(op)}` : ""}`);
    };
    if (this.failNextRun !== undefined) {
      const msg = this.failNextRun;
      this.failNextRun = undefined;
      fail(msg);
    }
    const work = structuredClone(this.tables);
    const key = `${tx.family} ${tx.table}`;
    for (const op of tx.ops) {
      const table = work.get(key);
      const needTable = (): FakeTable => table ?? fail("No such file or directory (table)", op);
      switch (op.kind) {
        case "table":
          if (op.verb === "add") {
            const t: FakeTable = table ?? { family: tx.family, name: tx.table, chains: new Map(), sets: new Map(), nextHandle: 1 };
            if (op.spec.comment !== undefined) t.comment = op.spec.comment;
            work.set(key, t);
          } else if (op.verb === "flush") {
            const t = needTable();
            for (const c of t.chains.values()) c.rules = [];
            for (const s of t.sets.values()) s.elements.clear();
          } else {
            needTable();
            work.delete(key);
          }
          break;
        case "chain": {
          const t = needTable();
          if ("spec" in op) {
            const existing = t.chains.get(op.spec.name);
            if (existing && op.verb === "create") fail("File exists", op);
            if (existing && (existing.spec.type !== op.spec.type || existing.spec.hook !== op.spec.hook)) fail("Device or resource busy (chain type mismatch)", op);
            if (!existing) t.chains.set(op.spec.name, { spec: { ...op.spec }, rules: [] });
            else if (op.spec.comment !== undefined) existing.spec.comment = op.spec.comment;
          } else {
            const c = t.chains.get(op.name) ?? fail("No such file or directory (chain)", op);
            if (op.verb === "flush") c.rules = [];
            else {
              if (c.rules.length) fail("Device or resource busy (chain not empty)", op);
              const ref = new RegExp(`\\b(jump|goto)\\s+${op.name}\\b`);
              for (const other of t.chains.values()) if (other.rules.some((r) => ref.test(r.rule))) fail("Device or resource busy (chain referenced)", op);
              t.chains.delete(op.name);
            }
          }
          break;
        }
        case "rule": {
          const t = needTable();
          if (op.verb === "delete") {
            const c = t.chains.get(op.chain) ?? fail("No such file or directory (chain)", op);
            const i = c.rules.findIndex((r) => r.handle === op.handle);
            if (i < 0) fail("Could not process rule: No such file or directory", op);
            c.rules.splice(i, 1);
          } else {
            const c = t.chains.get(op.spec.chain) ?? fail("Could not process rule: No such file or directory (chain)", op);
            for (const m of op.spec.rule.matchAll(/\b(?:jump|goto)\s+([A-Za-z0-9_.\-]+)/g)) {
              if (!t.chains.has(m[1]!)) fail(`Could not process rule: No such file or directory (chain ${m[1]})`, op);
            }
            const r: FakeRule = { handle: t.nextHandle++, rule: op.spec.rule };
            if (op.spec.comment !== undefined) r.comment = op.spec.comment;
            if (op.verb === "insert") c.rules.unshift(r);
            else c.rules.push(r);
          }
          break;
        }
        case "set":
        case "map": {
          const t = needTable();
          if ("spec" in op) {
            if (!t.sets.has(op.spec.name)) t.sets.set(op.spec.name, { kind: op.kind, spec: { ...op.spec }, elements: new Map() });
          } else {
            const s = t.sets.get(op.name);
            if (!s || s.kind !== op.kind) return fail(`No such file or directory (${op.kind})`, op);
            if (op.verb === "flush") s.elements.clear();
            else t.sets.delete(op.name);
          }
          break;
        }
        case "element": {
          const t = needTable();
          const s = t.sets.get(op.spec.set) ?? fail("No such file or directory (set)", op);
          if (op.verb === "add") s.elements.set(op.spec.key, { ...op.spec });
          else if (!s.elements.delete(op.spec.key)) fail("Could not process element: No such file or directory", op);
          break;
        }
      }
    }
    this.tables = work;
  }

  listTable(family: NftFamily, table: string): NftTableState | undefined {
    const t = this.tables.get(`${family} ${table}`);
    if (!t) return undefined;
    const state: NftTableState = { family, name: table, chains: [], rules: [], sets: [], raw: [] };
    if (t.comment !== undefined) state.comment = t.comment;
    for (const [name, c] of t.chains) {
      state.chains.push({ ...c.spec, name });
      for (const r of c.rules) state.rules.push({ chain: name, ...r });
    }
    for (const [name, s] of t.sets) {
      const entry: NftTableState["sets"][number] = {
        name,
        kind: s.kind,
        type: s.spec.type,
        flags: [...(s.spec.flags ?? [])],
        elements: [...s.elements.values()].map((e) => elementText(e, false)),
      };
      if (s.spec.comment !== undefined) entry.comment = s.spec.comment;
      state.sets.push(entry);
    }
    return state;
  }

  listChain(family: NftFamily, table: string, chain: string): NftRuleRef[] | undefined {
    if (!this.tables.get(`${family} ${table}`)?.chains.has(chain)) return undefined;
    return this.listTable(family, table)!.rules.filter((r) => r.chain === chain);
  }

  /** The whole ruleset as canonical `add …` lines (see module doc). */
  dump(): string {
    const out: string[] = [];
    for (const [, t] of byName(this.tables)) {
      const id = `${t.family} ${t.name}`;
      out.push(t.comment !== undefined ? `add table ${id} { comment "${t.comment}" ; }` : `add table ${id}`);
      const chains = byName(t.chains);
      for (const [name, c] of chains) out.push(`add chain ${id} ${name}${chainBody({ ...c.spec, name })}`);
      const sets = byName(t.sets);
      for (const kind of ["set", "map"] as const) {
        for (const [name, s] of sets) if (s.kind === kind) out.push(`add ${kind} ${id} ${name}${setBody(s.spec)}`);
      }
      for (const [name, c] of chains) {
        for (const r of c.rules) {
          const spec = r.comment === undefined ? { chain: name, rule: r.rule } : { chain: name, rule: r.rule, comment: r.comment };
          out.push(`add rule ${id} ${name} ${ruleText(spec)}`);
        }
      }
      for (const [name, s] of sets) for (const e of s.elements.values()) out.push(`add element ${id} ${name} { ${elementText(e, true)} }`);
    }
    return out.length ? `${out.join("\n")}\n` : "";
  }
}
