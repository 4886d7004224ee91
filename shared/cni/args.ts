/**
 * CNI_ARGS parsing with upstream `types.LoadArgs` semantics:
 * `K=V;K=V`, keys matched case-sensitively against the Go field names a plugin declares
 * (`IP`, `MAC`, `GATEWAY`, ...), unknown keys rejected unless `IgnoreUnknown` is `1`/`true`.
 *
 * Errors keep upstream's wording (`ARGS: ...`) and carry code 4: CNI_ARGS is an environment variable.
 */
import { InvalidEnvError } from "./errors.ts";
import { goQuote } from "./go-quote.ts";

function parseGoBool(v: string): boolean | undefined {
  switch (v.toLowerCase()) {
    case "1":
    case "t":
    case "true":
      return true;
    case "0":
    case "f":
    case "false":
      return false;
    default:
      return undefined;
  }
}

/**
 * Parses CNI_ARGS, accepting only `known` keys (plus `IgnoreUnknown`). Returns the last value of
 * each known key present. An empty string parses to `{}`. `validators` check a known key's value in
 * pair order, as Go's UnmarshalText does (`ARGS: error parsing value of pair "IP=x": <why>`).
 */
export function parseCniArgs(
  raw: string,
  known: readonly string[],
  validators: Readonly<Record<string, (value: string) => void>> = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === "") return out;
  const pairs = raw.split(";");
  const unknown: string[] = [];
  let ignoreUnknown = false;
  for (const pair of pairs) {
    const kv = pair.split("=");
    if (kv.length !== 2) throw new InvalidEnvError(`ARGS: invalid pair ${goQuote(pair)}`);
    const [key, value] = kv as [string, string];
    if (key === "IgnoreUnknown") {
      const b = parseGoBool(value);
      if (b === undefined) {
        throw new InvalidEnvError(
          `ARGS: error parsing value of pair ${goQuote(pair)}: boolean unmarshal error: invalid input ${value}`,
        );
      }
      ignoreUnknown = b;
      continue;
    }
    if (!known.includes(key)) {
      unknown.push(pair);
      continue;
    }
    const validate = validators[key];
    if (validate) {
      try {
        validate(value);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        throw new InvalidEnvError(`ARGS: error parsing value of pair ${goQuote(pair)}: ${why}`, { cause: err });
      }
    }
    out[key] = value;
  }
  if (unknown.length > 0 && !ignoreUnknown) {
    throw new InvalidEnvError(`ARGS: unknown args [${unknown.map(goQuote).join(" ")}]`);
  }
  return out;
}

/**
 * dhcp's lenient split: `K=V` pairs separated by `;`, malformed pairs skipped, no validation of keys.
 */
export function parseCniArgsLenient(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of raw.split(";")) {
    const i = pair.indexOf("=");
    if (i <= 0) continue;
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}
