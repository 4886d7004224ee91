/**
 * Differences between what the Go reference and ours produced, as short path-addressed lines, and
 * the allow-list that excuses the intended ones (test/e2e/known-differences.ts).
 */
import { normName } from "./snapshot.ts";

export interface Difference {
  /** e.g. `result.interfaces[1].mtu`, `host.sysctls.net/ipv4/ip_forward`, `host.iptables`. */
  path: string;
  go: unknown;
  ours: unknown;
}

const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i;

/**
 * A CNI result with randomness removed: MACs, random veth names, the container netns path (each
 * side has its own). Key order never matters here because results are compared parsed (1.x: HEAD's
 * sorted keys, 1.1.1's struct order); `dns` is compared as printed (both print `"dns": {}`).
 */
export function normaliseResult(result: unknown): unknown {
  const walk = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        out[k] = walk(x, k);
      }
      return out;
    }
    if (typeof v === "string" && MAC.test(v)) return "<mac>";
    if (key === "name") return normName(v);
    if (key === "sandbox" && typeof v === "string" && v !== "") return "<container netns>";
    return v;
  };
  return walk(result, "");
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Ordered deep comparison (results, error objects). */
export function diffOrdered(go: unknown, ours: unknown, path: string, out: Difference[] = []): Difference[] {
  if (isObj(go) && isObj(ours)) {
    for (const k of new Set([...Object.keys(go), ...Object.keys(ours)])) diffOrdered(go[k], ours[k], `${path}.${k}`, out);
  } else if (Array.isArray(go) && Array.isArray(ours) && go.length === ours.length) {
    go.forEach((g, i) => diffOrdered(g, ours[i], `${path}[${i}]`, out));
  } else if (JSON.stringify(go) !== JSON.stringify(ours)) {
    out.push({ path, go, ours });
  }
  return out;
}

/**
 * Snapshot comparison: objects key by key; arrays as multisets (entries only on one side are
 * reported), because kernel listings have no meaningful order once normalised.
 */
export function diffState(go: unknown, ours: unknown, path: string, out: Difference[] = []): Difference[] {
  if (isObj(go) && isObj(ours)) {
    for (const k of new Set([...Object.keys(go), ...Object.keys(ours)])) diffState(go[k], ours[k], `${path}.${k}`, out);
    return out;
  }
  if (Array.isArray(go) && Array.isArray(ours)) {
    const left = go.map((x) => JSON.stringify(x));
    const right = ours.map((x) => JSON.stringify(x));
    const onlyGo = [...left];
    const onlyOurs: string[] = [];
    for (const r of right) {
      const i = onlyGo.indexOf(r);
      if (i >= 0) onlyGo.splice(i, 1);
      else onlyOurs.push(r);
    }
    if (onlyGo.length > 0 || onlyOurs.length > 0) out.push({ path, go: onlyGo, ours: onlyOurs });
    return out;
  }
  if (JSON.stringify(go) !== JSON.stringify(ours)) out.push({ path, go, ours });
  return out;
}

export function formatDifference(d: Difference): string {
  const show = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));
  return `${d.path}: go=${show(d.go)} ours=${show(d.ours)}`;
}
