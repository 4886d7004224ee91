/**
 * In-memory iptables for tests: one iptables-save model per IP family, and a restore that
 * applies `--noflush` transactions to it atomically with the real tool's rules (addresses
 * canonicalised as the kernel stores them; `-D` of a missing rule, `-N` of an existing chain,
 * a jump to a missing chain, or `-X` of a referenced or non-empty chain fail the whole
 * transaction). `dump()` is the canonical iptables-save text for golden tests.
 */
import type { IPFamily } from "../../ip/ip.ts";
import { CommandError } from "../exec.ts";
import type { IptablesDriver } from "./driver.ts";
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
  /** When set, the next restore fails with this stderr (then the hook clears itself). */
  failNextRestore: string | undefined;
  installed = true;

  available(): boolean {
    return this.installed;
  }

  /** Seeds a family from iptables-save text. */
  load(family: IPFamily, saveText: string): void {
    for (const [name, t] of parseSave(saveText)) this.families.get(family)!.set(name, t);
  }

  readTable(family: IPFamily, table: string): SavedTable | undefined {
    const t = this.families.get(family)!.get(table);
    return t === undefined ? undefined : clone(new Map([[table, t]])).get(table);
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
        case "-D": {
          if (list === undefined) return fail(n, "No chain/target/match by that name");
          const i = list.findIndex((r) => sameRule(r, rest));
          if (i < 0) fail(n, "Bad rule (does a matching rule exist in that chain?)");
          list.splice(i, 1);
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
