/**
 * The JavaScriptCore options the agent runs with. JSC reads them from `BUN_JSC_<option>` variables
 * once, as the runtime starts, so `cni-plugins serve` executes itself again, once, with them set
 * (serve.ts); a variable the environment already has stands (an operator's choice, or the second
 * start).
 *
 * `useFTLJIT=0`: no FTL, JSC's last optimising tier. Every worker thread has its own JavaScript VM
 * and compiles its own code; over a long life each one's hot functions reach the FTL tier one by
 * one, and the machine code that leaves resident is what kept the agent's memory growing (10,000
 * bridge ADD/DEL pairs: +15 % over the first 1,000 with FTL, +8 % without). Plugin calls are short
 * and wait on the kernel: they run as fast in the tiers below (docs/performance.md, "Resident mode").
 */
type Env = Readonly<Record<string, string | undefined>>;

const AGENT_JSC_OPTIONS: Readonly<Record<string, string>> = { BUN_JSC_useFTLJIT: "0" };

/** The options `env` lacks (empty: the runtime already runs with them or with an operator's values). */
export function missingRuntimeOptions(env: Env): Record<string, string> {
  const missing: Record<string, string> = {};
  for (const [name, value] of Object.entries(AGENT_JSC_OPTIONS)) if (env[name] === undefined) missing[name] = value;
  return missing;
}
