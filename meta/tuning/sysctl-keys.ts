/**
 * tuning's sysctl keys: duplicate detection on the raw config text (JSON.parse keeps only the last
 * of two equal keys, upstream refuses them), the key → /proc/sys path rule, and the allow-list.
 */
import { InternalError } from "../../shared/cni/errors.ts";

// ---- duplicate keys --------------------------------------------------------------------------

/** A tiny JSON walker over already-valid JSON text (skel parsed it before we run). */
class JsonWalker {
  readonly #s: string;
  #i = 0;
  constructor(s: string) {
    this.#s = s;
  }
  #ws(): void {
    while (this.#i < this.#s.length && " \t\r\n".includes(this.#s[this.#i]!)) this.#i++;
  }
  #peek(): string {
    this.#ws();
    return this.#s[this.#i] ?? "";
  }
  #string(): string {
    const start = this.#i;
    this.#i++; // opening quote
    while (this.#i < this.#s.length && this.#s[this.#i] !== '"') this.#i += this.#s[this.#i] === "\\" ? 2 : 1;
    this.#i++; // closing quote
    return JSON.parse(this.#s.slice(start, this.#i)) as string;
  }
  /** Skips one value; for objects calls `onMember(key)` before each member value is visited by `visit`. */
  value(visit?: (key: string) => ((w: JsonWalker) => void) | undefined): void {
    const c = this.#peek();
    if (c === "{") {
      this.#i++;
      if (this.#peek() === "}") {
        this.#i++;
        return;
      }
      for (;;) {
        this.#peek();
        const key = this.#string();
        this.#peek(); // ':'
        this.#i++;
        const handler = visit?.(key);
        if (handler !== undefined) handler(this);
        else this.value();
        const sep = this.#peek();
        this.#i++;
        if (sep === "}") return;
      }
    }
    if (c === "[") {
      this.#i++;
      if (this.#peek() === "]") {
        this.#i++;
        return;
      }
      for (;;) {
        this.value();
        const sep = this.#peek();
        this.#i++;
        if (sep === "]") return;
      }
    }
    if (c === '"') {
      this.#string();
      return;
    }
    while (this.#i < this.#s.length && !",}] \t\r\n".includes(this.#s[this.#i]!)) this.#i++;
  }
  /** The keys of the object at the cursor (skipping its values); [] when it is not an object. */
  keysOfObject(): string[] {
    const keys: string[] = [];
    if (this.#peek() !== "{") {
      this.value();
      return keys;
    }
    this.value((k) => {
      keys.push(k);
      return undefined;
    });
    return keys;
  }
}

/**
 * Upstream validateSysctlConflictingKeys: every key of the top-level `sysctl` object(s) (field
 * name matched case-insensitively, as Go does) must be unique. Throws
 * `duplicated sysctl keys are not allowed`.
 */
export function checkDuplicateSysctlKeys(configText: string): void {
  const seen = new Set<string>();
  let dup = false;
  new JsonWalker(configText).value((key) => {
    if (key.toLowerCase() !== "sysctl") return undefined;
    return (w) => {
      for (const k of w.keysOfObject()) {
        if (seen.has(k)) dup = true;
        seen.add(k);
      }
    };
  });
  if (dup) throw new InternalError("duplicated sysctl keys are not allowed");
}

// ---- key → path ------------------------------------------------------------------------------

const PROC_SYS = "/proc/sys";

/** Go's path.Clean for an absolute path. */
function cleanAbs(p: string): string {
  const out: string[] = [];
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}

/**
 * Upstream getSysctlFilename: every `.` becomes `/`, then the first `IFNAME` is replaced by the
 * interface name (so names with dots, like `eth0.100`, survive), joined under /proc/sys and
 * cleaned; anything outside /proc/sys/net/ is refused (`invalid net sysctl key: "<key>"`).
 */
export function sysctlFileName(key: string, ifName: string): string {
  const rel = key.replaceAll(".", "/").replace("IFNAME", ifName);
  const file = cleanAbs(`${PROC_SYS}/${rel}`);
  if (!file.startsWith(`${PROC_SYS}/net/`)) throw new InternalError(`invalid net sysctl key: ${JSON.stringify(key)}`);
  return file;
}

// ---- allow-list ------------------------------------------------------------------------------

/** Where upstream reads the allow-list from. */
export const ALLOWLIST_PATH = "/etc/cni/tuning/allowlist.conf";

/** Non-empty trimmed lines of the allow-list file text. */
export function parseAllowlist(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/**
 * Checks every configured key (the original dotted key, before IFNAME substitution) against the
 * allow-list. Unlike upstream (unanchored regexps), a pattern must match the WHOLE key, so
 * `net.ipv4.conf.IFNAME.rp_filter` does not also allow `...rp_filter_x` or `xnet.ipv4...`.
 * Throws upstream's message `Sysctl <k> is not allowed. Only the following sysctls are allowed: [..]`.
 */
export function checkAllowlist(keys: readonly string[], allowlist: readonly string[]): void {
  const patterns = allowlist.map((p) => {
    try {
      return new RegExp(`^(?:${p})$`);
    } catch (err) {
      throw new InternalError(`error parsing regexp: ${JSON.stringify(p)} in ${ALLOWLIST_PATH}`, { cause: err });
    }
  });
  for (const key of keys) {
    if (!patterns.some((re) => re.test(key))) {
      throw new InternalError(`Sysctl ${key} is not allowed. Only the following sysctls are allowed: [${allowlist.join(" ")}]`);
    }
  }
}
