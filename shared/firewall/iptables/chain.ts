/**
 * A declarative iptables model (upstream portmap `chain.go`, netavark's VarkChain) and a planner
 * that turns "make it so" requests into ONE iptables-restore `--noflush` transaction, computed
 * against the table as read once with iptables-save.
 *
 * The planner simulates every command on its copy of the table, so rule positions and
 * existence checks stay right within one transaction; the restore only contains commands that
 * must succeed against the state that was read (a concurrent change makes the restore fail, and
 * the caller re-reads and retries).
 */
import { emptyTable, ruleLine, type SavedTable } from "./save-format.ts";
import { canonicalRule, ruleTarget, sameRule } from "./rule.ts";

/** A rule: argument list in iptables-save order, without `-A <chain>`. */
export type IptRule = readonly string[];

/** A chain owned by one plugin instance, plus the rules elsewhere that send packets into it. */
export interface IptChain {
  table: string;
  name: string;
  /** Rules the chain must contain, in this relative order; missing ones are added in place, others are left alone. */
  rules: readonly IptRule[];
  /** Rules in other (usually built-in) chains, normally jumping to `name`; appended when absent. */
  entryRules: readonly { chain: string; rule: IptRule }[];
}

function cloneTable(t: SavedTable): SavedTable {
  return {
    name: t.name,
    chains: [...t.chains],
    policies: new Map(t.policies),
    rules: new Map([...t.rules].map(([k, v]) => [k, v.map((r) => [...r])])),
  };
}

/** Builds one restore transaction for one table. */
export class IptablesPlan {
  readonly table: string;
  private readonly state: SavedTable;
  private readonly lines: string[] = [];

  /** `current` is the table as just read (undefined when it does not exist yet). */
  constructor(table: string, current: SavedTable | undefined) {
    this.table = table;
    this.state = current ? cloneTable(current) : emptyTable(table);
  }

  /** True when nothing has to change. */
  get empty(): boolean {
    return this.lines.length === 0;
  }

  /** The planned state of the table after the transaction. */
  get result(): SavedTable {
    return this.state;
  }

  hasChain(name: string): boolean {
    return this.state.rules.has(name);
  }

  rulesOf(chain: string): readonly (readonly string[])[] {
    return this.state.rules.get(chain) ?? [];
  }

  /** `iptables -N`, unless the chain exists. */
  ensureChainExists(name: string): void {
    if (this.hasChain(name)) return;
    this.lines.push(`-N ${name}`);
    this.state.chains.push(name);
    this.state.policies.set(name, "-");
    this.state.rules.set(name, []);
  }

  /** Appends `rule` to `chain` unless an equal rule is present (upstream AppendUnique). */
  appendUnique(chain: string, rule: IptRule): void {
    const list = this.mustRules(chain);
    if (list.some((r) => sameRule(r, rule))) return;
    this.lines.push(ruleLine("-A", chain, rule));
    list.push(canonicalRule(rule));
  }

  /** Inserts `rule` at 1-based `position` of `chain`. */
  insertAt(chain: string, position: number, rule: IptRule): void {
    const list = this.mustRules(chain);
    this.lines.push(ruleLine("-I", chain, rule, position));
    list.splice(position - 1, 0, canonicalRule(rule));
  }

  /** Deletes every rule of `chain` equal to `rule` (none present: nothing to do). */
  deleteRule(chain: string, rule: IptRule): void {
    const list = this.state.rules.get(chain);
    if (list === undefined) return;
    for (let i = list.length - 1; i >= 0; i--) {
      if (sameRule(list[i]!, rule)) {
        this.lines.push(ruleLine("-D", chain, list[i]!));
        list.splice(i, 1);
      }
    }
  }

  /**
   * Makes `spec` true: the chain exists, holds every rule of `spec.rules` (a missing rule goes
   * just before the first present rule that follows it in `spec.rules`, else at the end), and every
   * entry rule is present in its chain.
   */
  ensureChain(spec: IptChain): void {
    this.ensureChainExists(spec.name);
    const list = this.mustRules(spec.name);
    spec.rules.forEach((rule, i) => {
      if (list.some((r) => sameRule(r, rule))) return;
      const later = spec.rules.slice(i + 1);
      const before = list.findIndex((r) => later.some((l) => sameRule(r, l)));
      if (before < 0) this.appendUnique(spec.name, rule);
      else this.insertAt(spec.name, before + 1, rule);
    });
    for (const e of spec.entryRules) this.appendUnique(e.chain, e.rule);
  }

  /**
   * Removes chain `name` entirely: every rule in any chain of the table that jumps or goes to it,
   * then its rules, then the chain. Absent chain: nothing to do.
   */
  deleteChain(name: string): void {
    if (!this.hasChain(name)) return;
    for (const chain of this.state.chains) {
      if (chain === name) continue;
      const list = this.state.rules.get(chain)!;
      for (let i = list.length - 1; i >= 0; i--) {
        if (ruleTarget(list[i]!) === name) {
          this.lines.push(ruleLine("-D", chain, list[i]!));
          list.splice(i, 1);
        }
      }
    }
    this.lines.push(`-F ${name}`, `-X ${name}`);
    this.state.chains = this.state.chains.filter((c) => c !== name);
    this.state.rules.delete(name);
    this.state.policies.delete(name);
  }

  /** The iptables-restore input (`*table` … `COMMIT`), or "" when nothing changes. */
  render(): string {
    if (this.empty) return "";
    return `*${this.table}\n${this.lines.join("\n")}\nCOMMIT\n`;
  }

  private mustRules(chain: string): string[][] {
    const list = this.state.rules.get(chain);
    if (list === undefined) throw new Error(`iptables plan: chain ${chain} does not exist in table ${this.table}`);
    return list;
  }
}
