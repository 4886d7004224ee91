/**
 * A declarative iptables model (upstream portmap `chain.go`, netavark's VarkChain) and a planner
 * that turns "make it so" requests into ONE iptables-restore `--noflush` transaction.
 *
 * The planner reads only the chains a request names, each at most once per transaction (through a
 * {@link ChainReader}), and simulates every command on its copy of those chains, so rule positions
 * and existence checks stay right within one transaction. The restore only contains commands that
 * must succeed against the state that was read: a concurrent change makes the restore fail, and
 * the caller plans again from fresh reads (transact.ts).
 *
 * An optimistic plan may skip a read by assuming the usual state, provided the restore itself
 * fails when the assumption is wrong: a chain assumed new is created with `-N` (fails when it
 * exists), a rule assumed present is asserted with `-C` or removed with `-D` (both fail when it is
 * absent), a chain to delete is declared first (`:CHAIN - [0:0]` creates or flushes it) so that
 * `-X` only fails when a jump to it remains. A failed optimistic restore changes nothing; the
 * transaction is then planned again without assumptions.
 *
 * Facts the kernel guarantees save reads too: a chain that did not exist has no jumps to it, and
 * the target of a jump that was read exists.
 */
import { LazyRule, type ChainListing } from "./lazy-rule.ts";
import { ruleLine } from "./save-format.ts";
import { canonicalRule, chainNeedle, hasRule, needleOf, ruleTarget, sameRule, sameRules } from "./rule.ts";

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

/**
 * Reads one chain of one table: its rules, or undefined when the chain does not exist. `exact`:
 * every rule decoded (asked when a rule read lazily cannot be decoded: lazy-rule.ts).
 */
export type ChainReader = (table: string, chain: string, exact?: boolean) => ChainListing | undefined;

/** A chain as planned: rules decoded (canonical) or not yet (lazy-rule.ts). */
type Entries = (string[] | LazyRule)[];

/**
 * A rule without a needle (rule.ts needleOf) is looked for in the kernel only in a chain of at most
 * this many rules, all of them decoded (7-15 µs each), rather than with a `-C` in the restore (which
 * has iptables-nft-restore read every rule of the table: 5 ms on an empty node, 8-14 ms next to 500
 * pods' rules).
 */
const WHOLE_CHAIN_RULES = 16;
/** The needle every rule holds. */
const EVERY_RULE = new Uint8Array(0);

/** The plan cannot go on: it would have to read a chain again after planning changes to it. */
export class IptablesPlanError extends Error {}

/** The planned commands for one table of a transaction. */
export class IptablesPlan {
  readonly table: string;
  /** True when this plan may rely on assumptions (see module doc). */
  readonly optimistic: boolean;
  private readonly read: (chain: string, exact?: boolean) => ChainListing | undefined;
  /** Chains as read (then as planned); null = does not exist. Chains never read are absent from the map. */
  private readonly known = new Map<string, Entries | null>();
  /** Chains this plan changed (their copies are no longer the kernel's). */
  private readonly changed = new Set<string>();
  private readonly lines: string[] = [];
  private changes = 0;

  /**
   * True when reading a chain costs no tool run (iptables-nft, read in the kernel: lazy-rule.ts):
   * a rule with a needle is then looked for rather than asserted with `-C`, since a `-C` has the
   * restore fetch and compare the whole chain (on a node of hundreds of pods, POSTROUTING holds a
   * rule per pod: 4-6 ms more per `-C` at 500 pods), while the kernel dump and a byte search of
   * the same chain cost well under a millisecond.
   */
  private readonly cheapReads: boolean;

  constructor(table: string, read: (chain: string, exact?: boolean) => ChainListing | undefined, optimistic = false, cheapReads = false) {
    this.table = table;
    this.read = read;
    this.optimistic = optimistic;
    this.cheapReads = cheapReads;
  }

  /** True when there is nothing to send. */
  get empty(): boolean {
    return this.lines.length === 0;
  }

  /** True when every planned command only asserts (`-C`): the restore would change nothing. */
  get changesNothing(): boolean {
    return this.changes === 0;
  }

  /** Whether `name` exists (reads it, unless a rule read elsewhere jumps to it). */
  hasChain(name: string): boolean {
    const known = this.known.get(name);
    if (known !== undefined) return known !== null;
    // A jump read elsewhere proves it; a rule that cannot be decoded proves nothing (no tool run).
    const needle = chainNeedle(name);
    for (const rules of this.known.values()) if (rules !== null && decodeMentioning(rules, needle).decoded.some((r) => ruleTarget(r) === name)) return true;
    return this.state(name) !== null;
  }

  /** The rules of `chain` (reads it); [] when it does not exist. */
  rulesOf(chain: string): readonly IptRule[] {
    const list = this.state(chain);
    return list === null ? [] : this.decoded(chain, list);
  }

  /**
   * The rules of `chain` whose kernel form contains `needle` (reads it, decoding only those; a
   * chain listed by the tool: the rules whose arguments would, as far as a decoded rule can tell —
   * all of them). For questions about a few rules of a chain of hundreds.
   */
  rulesMentioning(chain: string, needle: Uint8Array): readonly IptRule[] {
    const list = this.state(chain);
    return list === null ? [] : this.decoded(chain, list, needle);
  }

  /**
   * Whether `chain` holds `rule`, from the rules holding `needle` (reads the chain); undefined when
   * it cannot tell without the tool: one of them is of a shape nft-rules.ts does not read.
   */
  private find(chain: string, rule: IptRule, needle: Uint8Array): boolean | undefined {
    const list = this.state(chain);
    if (list === null) return false;
    const { decoded, undecodable } = decodeMentioning(list, needle);
    return hasRule(decoded, rule) ? true : undecodable ? undefined : false;
  }

  /**
   * What to look for `rule` by in `chain` in the kernel: its needle, or, for a rule with none, every
   * rule of the chain when it has few (a plugin's own chain, like portmap's CNI-HOSTPORT-MASQ);
   * undefined: the restore asserts it with `-C`, which costs a read of the whole table.
   */
  private needleFor(chain: string, rule: IptRule): Uint8Array | undefined {
    const needle = needleOf(rule);
    if (needle !== undefined) return needle;
    const list = this.state(chain);
    return list !== null && list.length <= WHOLE_CHAIN_RULES ? EVERY_RULE : undefined;
  }

  /** True when `chain` holds `rule` (reads it, decoding only the rules that may be `rule`). */
  holds(chain: string, rule: IptRule): boolean {
    const list = this.state(chain);
    return list !== null && hasRule(this.decoded(chain, list, needleOf(rule)), rule);
  }

  /** `iptables -N`, unless the chain exists. */
  ensureChainExists(name: string): void {
    if (this.hasChain(name)) return;
    this.create(name);
  }

  /**
   * Makes sure `rule` is in `chain` (created when missing): when absent it is inserted first
   * (upstream InsertUnique with prepend) or appended (AppendUnique). `assumePresent`: an optimistic
   * plan asserts it with `-C` instead of reading the chain.
   */
  ensureRule(chain: string, rule: IptRule, where: "first" | "last", assumePresent = false): void {
    if (this.assuming(chain, assumePresent)) {
      const needle = this.cheapReads ? this.needleFor(chain, rule) : undefined;
      const found = needle === undefined ? undefined : this.find(chain, rule, needle);
      if (found === true) return;
      if (found === undefined) {
        this.lines.push(ruleLine("-C", chain, rule));
        return;
      }
    }
    if (this.holds(chain, rule)) return;
    this.ensureChainExists(chain);
    if (where === "first") this.insertAt(chain, 1, rule);
    else this.append(chain, rule);
  }

  /** Inserts `rule` at 1-based `position` of `chain`. */
  insertAt(chain: string, position: number, rule: IptRule): void {
    const list = this.mustRules(chain);
    this.change(ruleLine("-I", chain, rule, position), () => list.splice(position - 1, 0, canonicalRule(rule)), chain);
  }

  /**
   * Deletes every rule of `chain` equal to `rule` (none present: nothing to do). `assumePresent`:
   * an optimistic plan deletes it once with `-D`, without reading the chain.
   */
  deleteRule(chain: string, rule: IptRule, assumePresent = false): void {
    if (this.assuming(chain, assumePresent)) {
      this.change(ruleLine("-D", chain, rule));
      return;
    }
    const list = this.state(chain);
    if (list === null) return;
    this.decoded(chain, list, needleOf(rule));
    for (let i = list.length - 1; i >= 0; i--) {
      const r = list[i]!;
      if (Array.isArray(r) && sameRule(r, rule)) this.change(ruleLine("-D", chain, r), () => list.splice(i, 1), chain);
    }
  }

  /**
   * Makes `spec` true: the chain exists, holds every rule of `spec.rules` (a missing rule goes
   * just before the first present rule that follows it in `spec.rules`, else at the end), and every
   * entry rule is present in its chain. A chain found missing is created and filled without reading
   * its entry chains (nothing can jump to a chain that did not exist). `assumeComplete`: an
   * optimistic plan asserts the rules and entry rules with `-C` instead of reading.
   */
  ensureChain(spec: IptChain, assumeComplete = false): void {
    if (this.assuming(spec.name, assumeComplete && spec.rules.length > 0)) {
      for (const rule of spec.rules) this.ensureRule(spec.name, rule, "last", true);
      for (const e of spec.entryRules) this.ensureRule(e.chain, e.rule, "last", true);
      return;
    }
    if (!this.hasChain(spec.name)) {
      this.create(spec.name);
      for (const rule of spec.rules) this.append(spec.name, rule);
      for (const e of spec.entryRules) this.appendUnread(e.chain, e.rule);
      return;
    }
    const list = this.mustRules(spec.name);
    spec.rules.forEach((rule, i) => {
      if (hasRule(this.decoded(spec.name, list), rule)) return;
      const later = spec.rules.slice(i + 1);
      const before = list.findIndex((r) => Array.isArray(r) && later.some((l) => sameRule(r, l)));
      if (before < 0) this.append(spec.name, rule);
      else this.insertAt(spec.name, before + 1, rule);
    });
    for (const e of spec.entryRules) this.ensureRule(e.chain, e.rule, "last", assumeComplete);
  }

  /**
   * Makes chain `name` hold exactly `rules` (created, or flushed and refilled when it differs),
   * in linear time however many rules. `assumeNew`: an optimistic plan creates it with `-N`
   * without reading it.
   */
  replaceChain(name: string, rules: readonly IptRule[], assumeNew = false): void {
    if (this.assuming(name, assumeNew)) {
      this.create(name);
    } else {
      const current = this.state(name);
      if (current !== null && sameRules(this.decoded(name, current), rules)) return;
      if (current === null) this.create(name);
      else this.change(`-F ${name}`, () => current.splice(0), name);
    }
    const list = this.mustRules(name);
    for (const rule of rules) this.change(ruleLine("-A", name, rule), () => list.push(canonicalRule(rule)), name);
  }

  /**
   * Removes chain `name` entirely: every rule of the `referrers` chains that jumps or goes to it,
   * then its rules, then the chain. Absent chain: nothing to do. `assumeEntries`: an optimistic plan
   * deletes exactly these jump rules with `-D`, then declares the chain (`:name - [0:0]` creates or
   * flushes it, so it need not exist) and deletes it, without reading anything (the final `-X`
   * fails if any other jump to it remains).
   */
  deleteChain(name: string, referrers: readonly string[], assumeEntries?: readonly { chain: string; rule: IptRule }[]): void {
    if (this.assuming(name, assumeEntries !== undefined)) {
      for (const e of assumeEntries!) this.deleteRule(e.chain, e.rule, true);
      this.change(`:${name} - [0:0]`);
    } else {
      if (!this.hasChain(name)) return;
      for (const chain of referrers) {
        const list = this.state(chain);
        if (list === null) continue;
        this.decoded(chain, list, chainNeedle(name));
        for (let i = list.length - 1; i >= 0; i--) {
          const r = list[i]!;
          if (Array.isArray(r) && ruleTarget(r) === name) this.change(ruleLine("-D", chain, r), () => list.splice(i, 1), chain);
        }
      }
      this.change(`-F ${name}`, undefined, name);
    }
    this.change(`-X ${name}`, () => this.known.set(name, null), name);
  }

  /** This table's part of the restore input (`*table` … `COMMIT`), or "" when nothing is planned. */
  render(): string {
    if (this.empty) return "";
    return `*${this.table}\n${this.lines.join("\n")}\nCOMMIT\n`;
  }

  /** True when an assumption may replace reading `chain` (optimistic plan, chain not read yet). */
  private assuming(chain: string, wanted: boolean): boolean {
    return wanted && this.optimistic && !this.known.has(chain);
  }

  private state(chain: string): Entries | null {
    let s = this.known.get(chain);
    if (s === undefined) {
      const rules = this.read(chain);
      s = rules === undefined ? null : rules.map((r) => (r instanceof LazyRule ? r : canonicalRule(r)));
      this.known.set(chain, s);
    }
    return s;
  }

  /**
   * Decodes, in place, the rules of `list` (chain `chain`) that may contain `needle` (all when
   * undefined), and returns the decoded ones: the rules still lazy lack the needle, so they are
   * not the rule asked about. A rule that must be decoded but cannot be (not of a shape nft-rules.ts
   * reads) has the whole chain read again exactly, which only a chain this plan has not changed
   * allows.
   */
  private decoded(chain: string, list: Entries, needle?: Uint8Array): string[][] {
    const read = decodeMentioning(list, needle);
    if (!read.undecodable) return read.decoded;
    this.readExactly(chain, list);
    return list as string[][];
  }

  private readExactly(chain: string, list: Entries): void {
    if (this.changed.has(chain)) throw new IptablesPlanError(`iptables plan: chain ${chain} of table ${this.table} must be read again after the plan changed it`);
    const exact = this.read(chain, true);
    list.splice(0, list.length, ...(exact ?? []).map((r) => canonicalRule(r instanceof LazyRule ? (r.decode() ?? []) : r)));
  }

  private create(name: string): void {
    this.change(`-N ${name}`, () => this.known.set(name, []), name);
  }

  private append(chain: string, rule: IptRule): void {
    const list = this.mustRules(chain);
    this.change(ruleLine("-A", chain, rule), () => list.push(canonicalRule(rule)), chain);
  }

  /** Appends to a chain that need not be read (the rule cannot be there yet); keeps a read copy in step. */
  private appendUnread(chain: string, rule: IptRule): void {
    const list = this.known.get(chain);
    this.change(ruleLine("-A", chain, rule), () => list?.push(canonicalRule(rule)), chain);
  }

  private change(line: string, apply?: () => void, chain?: string): void {
    this.lines.push(line);
    this.changes++;
    apply?.();
    if (chain !== undefined) this.changed.add(chain);
  }

  private mustRules(chain: string): Entries {
    const list = this.state(chain);
    if (list === null) throw new Error(`iptables plan: chain ${chain} does not exist in table ${this.table}`);
    return list;
  }
}

/**
 * Decodes, in place, the rules of `list` that may contain `needle` (all when undefined); returns the
 * decoded rules, and whether one that may contain it could not be decoded (it stays lazy).
 */
function decodeMentioning(list: Entries, needle?: Uint8Array): { decoded: string[][]; undecodable: boolean } {
  const decoded: string[][] = [];
  let undecodable = false;
  for (let i = 0; i < list.length; i++) {
    let r = list[i]!;
    if (r instanceof LazyRule) {
      if (needle !== undefined && !r.mentions(needle)) continue;
      const args = r.decode();
      if (args === undefined) {
        undecodable = true;
        continue;
      }
      list[i] = r = canonicalRule(args);
    }
    decoded.push(r);
  }
  return { decoded, undecodable };
}

/** One restore transaction over any number of tables of one IP family. */
export class IptablesTransaction {
  private readonly plans = new Map<string, IptablesPlan>();
  private readonly read: ChainReader;
  readonly optimistic: boolean;
  private readonly cheapReads: boolean;

  /** `cheapReads`: reading a chain costs no tool run (see IptablesPlan). */
  constructor(read: ChainReader, optimistic = false, cheapReads = false) {
    this.read = read;
    this.optimistic = optimistic;
    this.cheapReads = cheapReads;
  }

  /** The plan for `table` (tables appear in the restore input in the order first used). */
  table(name: string): IptablesPlan {
    let p = this.plans.get(name);
    if (p === undefined) {
      p = new IptablesPlan(name, (chain, exact) => this.read(name, chain, exact), this.optimistic, this.cheapReads);
      this.plans.set(name, p);
    }
    return p;
  }

  get empty(): boolean {
    return [...this.plans.values()].every((p) => p.empty);
  }

  /** True when the plans only assert (see {@link IptablesPlan.changesNothing}). */
  get changesNothing(): boolean {
    return [...this.plans.values()].every((p) => p.changesNothing);
  }

  /** The whole iptables-restore input, or "" when nothing is planned. */
  render(): string {
    return [...this.plans.values()].map((p) => p.render()).join("");
  }
}
