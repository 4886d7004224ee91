/**
 * The numbers of `make bench`: medians of samples taken in alternation (ours, Go, Go, ours, ...),
 * so a change of load on a shared machine hits both implementations alike.
 */

/** Median of `xs` (mean of the two middle values for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The order in which the implementations run in round `round` (0-based): ABBA, i.e. reversed on
 * every odd round, so neither side always runs first (after the other's page-cache and slab work).
 */
export function alternation<T>(impls: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...impls] : [...impls].reverse();
}

/** ours / reference; NaN when either is missing or the reference is 0. */
export function ratio(ours: number, reference: number): number {
  if (!Number.isFinite(ours) || !Number.isFinite(reference) || reference === 0) return Number.NaN;
  return ours / reference;
}
