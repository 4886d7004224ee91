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
import { dnsSchema, parsePrevResult } from "./result/index.ts";
import type { CmdArgs, Result } from "./types.ts";

/** `ipam` as a main plugin sees it: only the type matters; the delegate parses the rest. */
export const ipamRefSchema = t.object("IPAM", { type: t.string() });

/** Fields of upstream's `types.NetConf`. `prevResult` is kept raw and parsed with {@link prevResultFrom}. */
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

/** The config's prevResult in the current type, or undefined when absent/null. */
export function prevResultFrom(args: CmdArgs): Result | undefined {
  const raw = getField(args.config, "prevResult");
  if (raw === undefined || raw === null) return undefined;
  return parsePrevResult(raw, args.cniVersion);
}

/** The IPAM plugin type named by the config (`""` when there is no ipam section). */
export function ipamTypeOf(args: CmdArgs): string {
  const ipam = getField(args.config, "ipam");
  if (typeof ipam !== "object" || ipam === null) return "";
  const type = getField(ipam as Record<string, unknown>, "type");
  return typeof type === "string" ? type : "";
}

/** One live attachment as GC receives it in `cni.dev/valid-attachments`. */
export interface ValidAttachment {
  containerID: string;
  ifName: string;
}

/**
 * GC's `cni.dev/valid-attachments` (spec 1.1.0) as {containerID, ifName} pairs. Undefined when the
 * key is absent or malformed: a GC must then collect nothing, never "everything".
 */
export function validAttachmentsOf(config: Record<string, unknown>): ValidAttachment[] | undefined {
  const raw = config["cni.dev/valid-attachments"];
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
