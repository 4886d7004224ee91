/**
 * Go's `time.ParseDuration` text (`1h2m3.5s`, `300ms`, `0`), as Go programs take durations in
 * flags and configuration; errors keep Go's wording.
 */

const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A text that is not a Go duration; the message is Go's. */
export class GoDurationError extends Error {
  override name = "GoDurationError";
}

/** Parses a Go duration into milliseconds. */
export function parseGoDuration(text: string): number {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s.startsWith("-") ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new GoDurationError(`time: invalid duration ${JSON.stringify(text)}`);
  let total = 0;
  const re = /^([0-9]*\.?[0-9]*)(ns|us|µs|ms|s|m|h)/;
  while (s !== "") {
    const m = re.exec(s);
    if (m === null || m[1] === "" || m[1] === ".") {
      const bad = /^[0-9.]+$/.test(s) ? `time: missing unit in duration ${JSON.stringify(text)}` : `time: invalid duration ${JSON.stringify(text)}`;
      throw new GoDurationError(bad);
    }
    total += Number(m[1]) * (UNIT_MS[m[2] ?? "s"] ?? 0);
    s = s.slice(m[0].length);
  }
  return sign * total;
}
