/**
 * The spec 1.1.0 fields of a result's interface entry that interface plugins fill in beyond
 * upstream: `mtu` (the MTU the plugin set on the link) and `pciID` (host-device: the PCI address of
 * the device). Only results of cniVersion 1.1.0 and later carry them: spec 1.0.0 defines neither
 * (Go's libcni, whose 1.0/1.1 types are one, would print them at 1.0.0 too), and the conversions
 * to 0.x drop them (shared/cni/result/v100.ts).
 */
import type { Interface } from "../cni/types.ts";
import { versionGte } from "../cni/version.ts";

/** The first result version whose interfaces have `mtu` and `pciID`. */
export const INTERFACE_FIELDS_VERSION = "1.1.0";

/** `mtu` (when > 0) and `pciID` (when non-empty) for a result of `cniVersion`; {} before 1.1.0. */
export function v11InterfaceFields(cniVersion: string, f: { mtu?: number | undefined; pciID?: string | undefined }): Pick<Interface, "mtu" | "pciID"> {
  if (!versionGte(cniVersion, INTERFACE_FIELDS_VERSION)) return {};
  return {
    ...(f.mtu !== undefined && f.mtu > 0 ? { mtu: f.mtu } : {}),
    ...(f.pciID !== undefined && f.pciID !== "" ? { pciID: f.pciID } : {}),
  };
}
