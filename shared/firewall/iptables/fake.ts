/**
 * In-memory iptables for tests: one iptables-save model per IP family, a chain listing as
 * `iptables -S <chain>` gives it, and a restore that applies `--noflush` transactions to it
 * atomically with the real tool's rules (addresses canonicalised as the kernel stores them; `-C`
 * or `-D` of a missing rule, `-N` of an existing chain, a jump to a missing chain, or `-X` of a
 * referenced or non-empty chain fail the whole transaction). Every chain listed is recorded in
 * {@link FakeIptables.reads}, every restore in {@link FakeIptables.transactions}, so tests can
 * assert what a call read and wrote. `dump()` is the canonical iptables-save text for golden tests
 * (a test's view only: the driver interface has no whole-table read).
 */
import type { IPFamily } from "../../ip/addr.ts";
import { CommandError } from "../exec.ts";
import { isBuiltinChain, type IptablesDriver } from "./driver.ts";
import { canonicalRule, ruleTarget, sameRule } from "./rule.ts";
import { BUILTIN_CHAINS, emptyTable, parseSave, renderSave, tokenize, type SavedTable } from "./save-format.ts";

const TARGETS = new Set(["ACCEPT", "DROP", "RETURN", "MASQUERADE", "SNAT", "DNAT", "MARK", "REJECT", "LOG", "REDIRECT", "CONNMARK", "QUEUE"]);

function clone(tables: Map<string, SavedTable>): Map<string, SavedTable> {
  const out = new Map<string, SavedTable>();
  for (const [name, t] of tables) {
    out.set(name, {
      name,
      chains: [...t.chains],
      policies: new Map(t.policies),
      rules: new Map([...t.rules].map(([k, v]) => [k, v.map((r) => [...r])])),
    });
  }
  return out;
}

export class FakeIptables implements IptablesDriver {
  private readonly families = new Map<IPFamily, Map<string, SavedTable>>([
    [4, new Map()],
    [6, new Map()],
  ]);
  /** Every restore input applied (or attempted), in order, with its family. */
  readonly transactions: { family: IPFamily; text: string }[] = [];
  /** Every chain listed, in order: `<family> <table> <chain>`. */
  readonly reads: string[] = [];
  /** When set, the next restore fails with this stderr (then the hook clears itself). */
  failNextRestore: string | undefined;
  installed = true;
  /**
   * How {@link deleteRules} answers: "kernel" deletes as iptables-nft over netlink does (no restore,
   * no listing recorded); "tool" declines, as iptables-legacy or a chain it cannot read does.
   */
  ruleDeletes: "kernel" | "tool" = "tool";
  /** Every deleteRules done "in the kernel": `<family> <table> <chain>: <n> deleted`. */
  readonly kernelDeletes: string[] = [];

  available(): boolean {
    return this.installed;
  }

  /**
   * Seeds the nat table of `family` the way kube-proxy fills it: `chains` KUBE-SEP-style chains of
   * `rulesPerChain` rules, each with a comment and a MARK target (hot-path tests assert they are
   * never read).
   */
  loadKubeProxyNat(family: IPFamily, chains: number, rulesPerChain: number): void {
    const lines = ["*nat"];
    const names = Array.from({ length: chains }, (_, i) => `KUBE-SEP-${i.toString(16).toUpperCase().padStart(16, "0")}`);
    for (const name of names) lines.push(`:${name} - [0:0]`);
    names.forEach((name, i) => {
      for (let j = 0; j < rulesPerChain; j++) {
        lines.push(`-A ${name} -s 10.${(i >> 8) & 255}.${i & 255}.${j + 1}/32 -m comment --comment "ns${i}/svc${i}:p${j}" -j MARK --set-xmark 0x4000/0x4000`);
      }
    });
    this.restore(family, `${lines.join("\n")}\nCOMMIT\n`);
    this.transactions.length = 0;
  }

  /** Seeds a family from iptables-save text. */
  load(family: IPFamily, saveText: string): void {
    for (const [name, t] of parseSave(saveText)) this.families.get(family)!.set(name, t);
  }

  listChain(family: IPFamily, table: string, chain: string): string[][] | undefined {
    this.reads.push(`${family} ${table} ${chain}`);
    const rules = this.families.get(family)!.get(table)?.rules.get(chain);
    if (rules === undefined) return isBuiltinChain(table, chain) ? [] : undefined;
    return rules.map((r) => [...r]);
  }

  /** `iptables-save -t <table>` of one family ("" when the table does not exist); recorded in {@link reads} as `<family> <table> (save)`. */
  saveTable(family: IPFamily, table: string): string {
    this.reads.push(`${family} ${table} (save)`);
    const t = this.families.get(family)!.get(table);
    return t === undefined ? "" : renderSave([t]);
  }

  deleteRules(family: IPFamily, table: string, chain: string, rules: readonly (readonly string[])[]): boolean {
    if (this.ruleDeletes === "tool") return false;
    const list = this.families.get(family)!.get(table)?.rules.get(chain) ?? [];
    const before = list.length;
    for (let i = list.length - 1; i >= 0; i--) if (rules.some((r) => sameRule(list[i]!, r))) list.splice(i, 1);
    this.kernelDeletes.push(`${family} ${table} ${chain}: ${before - list.length} deleted`);
    return true;
  }

  /** Canonical iptables-save text of one family (tables sorted by name). */
  dump(family: IPFamily): string {
    const tables = [...this.families.get(family)!.values()].sort((a, b) => a.name.localeCompare(b.name));
    return renderSave(tables);
  }

  restore(family: IPFamily, text: string): void {
    this.transactions.push({ family, text });
    const argv = [family === 6 ? "ip6tables-restore" : "iptables-restore", "--noflush", "--wait"];
    if (this.failNextRestore !== undefined) {
      const msg = this.failNextRestore;
      this.failNextRestore = undefined;
      throw new CommandError(argv, 1, msg);
    }
    const work = clone(this.families.get(family)!);
    let table: SavedTable | undefined;
    const lines = text.split("\n");
    const fail = (n: number, why: string): never => {
      throw new CommandError(argv, 1, `${argv[0]}: line ${n + 1} failed: ${why}`);
    };
    lines.forEach((raw, n) => {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) return;
      if (line.startsWith("*")) {
        const name = line.slice(1);
        if (!(name in BUILTIN_CHAINS)) fail(n, `unknown table ${name}`);
        table = work.get(name) ?? emptyTable(name);
        work.set(name, table);
        return;
      }
      if (table === undefined) return fail(n, "no table");
      const t: SavedTable = table;
      if (line === "COMMIT") {
        table = undefined;
        return;
      }
      if (line.startsWith(":")) {
        const name = line.slice(1).split(/\s+/)[0]!;
        if (t.rules.has(name)) t.rules.set(name, []); // --noflush: declaring an existing chain flushes it
        else {
          t.chains.push(name);
          t.rules.set(name, []);
          t.policies.set(name, "-");
        }
        return;
      }
      const [op, chain, ...rest] = tokenize(line);
      if (chain === undefined) return fail(n, "missing chain");
      const list = t.rules.get(chain);
      switch (op) {
        case "-N":
          if (list !== undefined) fail(n, "Chain already exists");
          t.chains.push(chain);
          t.rules.set(chain, []);
          t.policies.set(chain, "-");
          return;
        case "-F":
          if (list === undefined) fail(n, "No chain/target/match by that name");
          t.rules.set(chain, []);
          return;
        case "-X": {
          if (list === undefined) return fail(n, "No chain/target/match by that name");
          if (t.policies.get(chain) !== "-") fail(n, "cannot delete built-in chain");
          if (list.length > 0) fail(n, "Directory not empty");
          for (const other of t.rules.values()) if (other.some((r) => ruleTarget(r) === chain)) fail(n, "Too many links");
          t.chains = t.chains.filter((c) => c !== chain);
          t.rules.delete(chain);
          t.policies.delete(chain);
          return;
        }
        case "-A":
        case "-I": {
          if (list === undefined) return fail(n, "No chain/target/match by that name");
          let args = rest;
          let pos = op === "-I" ? 1 : list.length + 1;
          if (op === "-I" && rest[0] !== undefined && /^\d+$/.test(rest[0])) {
            pos = Number(rest[0]);
            args = rest.slice(1);
          }
          const target = ruleTarget(args);
          if (target !== undefined && !TARGETS.has(target) && !t.rules.has(target)) fail(n, `Couldn't load target \`${target}'`);
          if (pos < 1 || pos > list.length + 1) fail(n, "Index of insertion too big");
          list.splice(pos - 1, 0, canonicalRule(args));
          return;
        }
        case "-C":
        case "-D": {
          if (list === undefined) return fail(n, "No chain/target/match by that name");
          const i = list.findIndex((r) => sameRule(r, rest));
          if (i < 0) fail(n, "Bad rule (does a matching rule exist in that chain?)");
          if (op === "-D") list.splice(i, 1);
          return;
        }
        default:
          fail(n, `unsupported command ${op}`);
      }
    });
    if (table !== undefined) fail(lines.length - 1, "missing COMMIT");
    this.families.set(family, work);
  }
}
