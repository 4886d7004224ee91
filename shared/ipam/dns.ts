/**
 * `ipam.resolvConf` of host-local and cluster-local: turns a resolv.conf into the result's `dns` (upstream `host-local/dns.go`).
 * Lines are trimmed; empty lines and lines starting with `#` or `;` are skipped; lines with fewer
 * than two fields are ignored. `nameserver` appends its first argument, `domain` sets (last wins),
 * `search` and `options` append all their arguments; anything else is ignored. Inline comments are
 * not stripped.
 */
import { InternalError } from "../cni/errors.ts";
import type { DNS } from "../cni/types.ts";
import { readTextFile } from "../sys/file.ts";
import { PathError } from "../sys/path-error.ts";
import { goFields, goTrimSpace } from "./go-strings.ts";

/** Parses resolv.conf text. */
export function parseResolvConfText(text: string): DNS {
  const dns: DNS = {};
  for (const raw of text.split("\n")) {
    // bufio.ScanLines drops a trailing \r; TrimSpace would anyway.
    const line = goTrimSpace(raw);
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const fields = goFields(line);
    if (fields.length < 2) continue;
    const [keyword, ...rest] = fields as [string, ...string[]];
    switch (keyword) {
      case "nameserver":
        (dns.nameservers ??= []).push(rest[0]!);
        break;
      case "domain":
        dns.domain = rest[0]!;
        break;
      case "search":
        (dns.search ??= []).push(...rest);
        break;
      case "options":
        (dns.options ??= []).push(...rest);
        break;
    }
  }
  return dns;
}

/** Reads and parses a resolv.conf; a missing file fails like upstream (`open <path>: ...`). */
export function parseResolvConf(path: string): DNS {
  let text: string;
  try {
    text = readTextFile(path);
  } catch (err) {
    const failure = new PathError((err as NodeJS.ErrnoException).code === "EISDIR" ? "read" : "open", path, err);
    throw new InternalError(failure.message, { cause: failure });
  }
  return parseResolvConfText(text);
}
