/**
 * The base network configuration every plugin shares (upstream `types.NetConf`), as schema fields to
 * spread into a plugin's own config schema, plus the loader that wraps decode errors the way upstream
 * plugins do (`failed to load netconf: <why>`, code 7 naming the field).
 *
 * ```ts
 * const BridgeConf = t.object("NetConf", { ...netConfFields, bridge: t.string(), mtu: t.int() });
 * const conf = loadNetConf(BridgeConf, args);
 * ```
 */
import { decode, getField, t, type Schema } from "./decode.ts";
import { CniError, InvalidConfigError } from "./errors.ts";
import { dnsSchema } from "./result/common.ts";
import type { CmdArgs, ValidAttachment } from "./types.ts";

/** `ipam` as a main plugin sees it: only the type matters; the delegate parses the rest. */
export const ipamRefSchema = t.object("IPAM", { type: t.string() });

/** Fields of upstream's `types.NetConf`. `prevResult` is kept raw and parsed with prevResultFrom (result/prevresult.ts). */
export const netConfFields = {
  cniVersion: t.string(),
  name: t.string(),
  type: t.string(),
  capabilities: t.map(t.bool()),
  ipam: ipamRefSchema,
  dns: dnsSchema,
  prevResult: t.raw(),
  runtimeConfig: t.raw(),
  args: t.raw(),
};

/** Decodes `args.config` with `schema`; errors become code 7 `failed to load netconf: …`. */
export function loadNetConf<T>(schema: Schema<T>, args: CmdArgs): T {
  try {
    return decode(schema, args.config);
  } catch (err) {
    if (err instanceof CniError) {
      throw new InvalidConfigError(`failed to load netconf: ${err.message}`, { cause: err, details: err.details });
    }
    throw err;
  }
}

/**
 * How every plugin's config loader is called: `load<Plugin>Config(args, opts)`. `forDel`: for a verb
 * that must work on a config that became invalid — DEL, and where the plugin says so STATUS and GC
 * — the value checks that upstream's DEL does not make do not fail the call ({@link lenientForDel});
 * decoding errors (a field of the wrong type, code 7) still do, as upstream.
 */
export interface LoadOptions {
  forDel?: boolean;
}

/** `check()`; when loading for DEL, `fallback` in place of whatever it throws (see {@link LoadOptions}). */
export function lenientForDel<T>(opts: LoadOptions, fallback: T, check: () => T): T {
  if (opts.forDel !== true) return check();
  try {
    return check();
  } catch {
    return fallback;
  }
}

/** The IPAM plugin type named by the config (`""` when there is no ipam section). */
export function ipamTypeOf(args: CmdArgs): string {
  const ipam = getField(args.config, "ipam");
  if (typeof ipam !== "object" || ipam === null) return "";
  const type = getField(ipam as Record<string, unknown>, "type");
  return typeof type === "string" ? type : "";
}

/**
 * The keys a GC config carries its list of live attachments under, newest first: SPEC.md's
 * `cni.dev/valid-attachments`, and `cni.dev/attachments`, the name SPEC.md gave it until cni#1103
 * (a runtime written to that text sends only it); libcni sends both since (cni#1101).
 */
export const GC_ATTACHMENT_KEYS = ["cni.dev/valid-attachments", "cni.dev/attachments"] as const;

/**
 * The raw attachment list of a GC config under the newest key present (Go's field match: exact
 * key first, then case-insensitive; `null` counts as absent), with that key; undefined when neither
 * key is present.
 */
export function gcAttachmentList(config: Record<string, unknown>): { key: string; list: unknown } | undefined {
  for (const key of GC_ATTACHMENT_KEYS) {
    const list = getField(config, key);
    if (list !== undefined && list !== null) return { key, list };
  }
  return undefined;
}

/**
 * GC's live attachments ({@link gcAttachmentList}) as {containerID, ifName} pairs. Undefined when
 * the list is absent or malformed: a GC must then collect nothing, never "everything".
 */
export function validAttachmentsOf(config: Record<string, unknown>): ValidAttachment[] | undefined {
  const raw = gcAttachmentList(config)?.list;
  if (!Array.isArray(raw)) return undefined;
  const out: ValidAttachment[] = [];
  for (const a of raw) {
    if (typeof a !== "object" || a === null) return undefined;
    const { containerID, ifname } = a as { containerID?: unknown; ifname?: unknown };
    if (typeof containerID !== "string" || typeof ifname !== "string") return undefined;
    out.push({ containerID, ifName: ifname });
  }
  return out;
}
