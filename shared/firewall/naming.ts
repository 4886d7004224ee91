/**
 * Names and comments that outlive one plugin call, byte-identical to upstream
 * (`pkg/utils/utils.go`, `pkg/ip/ipmasq_nftables_linux.go`) so a Go plugin can DEL what we ADDed
 * and the reverse.
 */

import { goQuote, goUnquote } from "../cni/go-quote.ts";

/** Upstream `maxChainLength`: iptables chain names are at most 28 characters. */
export const MAX_CHAIN_LENGTH = 28;
/** Upstream `chainPrefix`. */
export const CHAIN_PREFIX = "CNI-";
/** Upstream `MaxHashLen`: hex length of a SHA-512 digest. */
export const MAX_HASH_LENGTH = 128;

/** `hex(sha512(s)).slice(0, n)`. */
export function hashPrefix(s: string, n: number): string {
  return new Bun.CryptoHasher("sha512").update(s).digest("hex").slice(0, n);
}

/**
 * Upstream `MustFormatHashWithPrefix(length, prefix, toHash)`: `prefix` followed by SHA-512 hex of
 * `toHash`, `length` characters in all. Throws `invalid length` as upstream panics.
 */
export function formatHashWithPrefix(length: number, prefix: string, toHash: string): string {
  if (length <= 0 || prefix.length >= length || length > MAX_HASH_LENGTH) throw new RangeError("invalid length");
  return prefix + hashPrefix(toHash, length - prefix.length);
}

/** Upstream `MustFormatChainNameWithPrefix(name, id, prefix)`: `CNI-<prefix><hash>`, 28 characters. */
export function formatChainNameWithPrefix(prefix: string, name: string, id: string): string {
  return formatHashWithPrefix(MAX_CHAIN_LENGTH, CHAIN_PREFIX + prefix, name + id);
}

/** Upstream `FormatChainName(name, id)`: `CNI-` + 24 hex of sha512(name+id). */
export function formatChainName(name: string, id: string): string {
  return formatChainNameWithPrefix("", name, id);
}

/** Upstream `FormatComment(name, id)`: `name: "<net>" id: "<cid>"` with Go `%q` quoting. */
export function formatComment(name: string, id: string): string {
  return `name: ${goQuote(name)} id: ${goQuote(id)}`;
}

/** The `(name, id)` of a {@link formatComment} comment; undefined when `comment` is not one. */
export function parseComment(comment: string): { name: string; id: string } | undefined {
  const m = /^name: (".*") id: (".*")$/s.exec(comment);
  if (m === null) return undefined;
  const name = goUnquote(m[1]!);
  const id = goUnquote(m[2]!);
  return name !== undefined && id !== undefined ? { name, id } : undefined;
}

/** Upstream nftables ipmasq `hashForNetwork`: 16 hex of sha512(network). */
export function masqNetworkHash(network: string): string {
  return hashPrefix(network, 16);
}

/** Upstream nftables ipmasq `hashForInstance`: `<h16(network)>-<h16(ifname:containerID)>`. */
export function masqInstanceHash(network: string, ifName: string, containerID: string): string {
  return `${masqNetworkHash(network)}-${hashPrefix(`${ifName}:${containerID}`, 16)}`;
}

/** knftables `CommentLengthMax`. */
export const NFT_COMMENT_MAX = 128;

/** Upstream `commentForInstance`: hash, then the names without `"`, cut to 128 bytes. */
export function masqInstanceComment(network: string, ifName: string, containerID: string): string {
  const strip = (s: string): string => s.replaceAll('"', "");
  const full = `${masqInstanceHash(network, ifName, containerID)}, net: ${strip(network)}, if: ${strip(ifName)}, id: ${strip(containerID)}`;
  return truncateBytes(full, NFT_COMMENT_MAX);
}

/** Go's `s[:n]` on a UTF-8 string (byte cut); a cut rune is dropped rather than split. */
function truncateBytes(s: string, n: number): string {
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= n) return s;
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes.slice(0, n)).replace(/\uFFFD$/, "");
}
