/**
 * Attaching a host-side veth to the bridge as a port (upstream setupVeth's host half in
 * plugins/main/bridge/bridge.go, step 3 of ADD): master, hairpin and isolated flags (always
 * written, so a reused name never inherits stale flags), and the port's VLAN entries.
 */
import { annotateError } from "../../shared/error/annotate.ts";
import type { Handle } from "../../shared/netlink/handle.ts";

export interface PortOptions {
  hairpin: boolean;
  isolated: boolean;
  /** Access VLAN (PVID + untagged); 0 = none. */
  vlan: number;
  /** Tagged VIDs. */
  trunk: readonly number[];
  /** Keep the VLANs the port already has (default PVID 1) when vlan/trunk are set. */
  preserveDefaultVlan: boolean;
}

/** Removes every VLAN entry the port has (`bridge vlan del dev X vid V master` for each). */
export function removePortVlans(nl: Handle, index: number): void {
  const entries = nl.bridgeVlanList().get(index) ?? [];
  for (const e of entries) nl.bridgeVlanDel(index, { vid: e.vid });
}

/** Adds the access VLAN and trunk VIDs to a port (a trunk without access VLAN keeps VID 1 as PVID). */
export function addPortVlans(nl: Handle, index: number, name: string, o: Pick<PortOptions, "vlan" | "trunk">): void {
  if (o.vlan !== 0) {
    try {
      nl.bridgeVlanAdd(index, { vid: o.vlan, pvid: true, untagged: true });
    } catch (err) {
      throw annotateError(`failed to setup vlan tag on interface ${JSON.stringify(name)}`, err);
    }
  }
  for (const vid of o.trunk) {
    try {
      nl.bridgeVlanAdd(index, { vid });
    } catch (err) {
      throw annotateError(`failed to setup vlan tag on interface ${JSON.stringify(name)}`, err);
    }
  }
  if (o.vlan === 0 && o.trunk.length > 0) {
    try {
      nl.bridgeVlanAdd(index, { vid: 1, pvid: true, untagged: true });
    } catch (err) {
      throw annotateError(`failed to setup vlan tag on interface ${JSON.stringify(name)}`, err);
    }
  }
}

/** Makes `port` a port of `bridge` with the flags and VLANs of `o`. */
export function attachPort(nl: Handle, port: { index: number; name: string }, bridge: { index: number; name: string }, o: PortOptions): void {
  try {
    nl.linkSetMaster(port.index, bridge.index);
  } catch (err) {
    throw annotateError(`failed to connect ${JSON.stringify(port.name)} to bridge ${bridge.name}`, err);
  }
  try {
    nl.linkSetHairpin(port.index, o.hairpin);
  } catch (err) {
    throw annotateError(`failed to setup hairpin mode for ${port.name}`, err);
  }
  try {
    nl.linkSetIsolated(port.index, o.isolated);
  } catch (err) {
    throw annotateError(`failed to set isolation on interface ${JSON.stringify(port.name)}`, err);
  }
  const hasVlans = o.vlan !== 0 || o.trunk.length > 0;
  if (hasVlans && !o.preserveDefaultVlan) {
    try {
      removePortVlans(nl, port.index);
    } catch (err) {
      throw annotateError(`failed to remove default vlan on interface ${JSON.stringify(port.name)}`, err);
    }
  }
  if (hasVlans) addPortVlans(nl, port.index, port.name, o);
}
