/**
 * VLAN options of the bridge plugin: the access VLAN (`vlan`) range check and the `vlanTrunk`
 * list, merged into a sorted, de-duplicated VID list with upstream's error messages
 * (upstream collectVlanTrunk).
 */
import { InvalidConfigError } from "../../shared/cni/errors.ts";

/** One `vlanTrunk` entry: a single `id` and/or a `minID`..`maxID` range. */
export interface VlanTrunkEntry {
  id?: number;
  minID?: number;
  maxID?: number;
}

/** `vlan` must be 0 (none) or a VID 1..4094. */
export function validateAccessVlan(vlan: number): void {
  if (vlan < 0 || vlan > 4094) throw new InvalidConfigError(`invalid VLAN ID ${vlan} (must be between 0 and 4094)`);
}

const isVid = (n: number): boolean => n > 0 && n <= 4094;

/**
 * The trunk VIDs, ascending and unique; `undefined` when `trunk` is absent. An empty result (e.g.
 * `[]`) is `[]`: it still counts as "trunk configured" for vlan_filtering, as upstream's non-nil list.
 */
export function collectVlanTrunk(trunk: readonly (VlanTrunkEntry | undefined)[] | undefined): number[] | undefined {
  if (trunk === undefined) return undefined;
  const vids = new Set<number>();
  for (const item of trunk) {
    if (item === undefined) continue;
    const { minID, maxID, id } = item;
    if (minID !== undefined && maxID !== undefined) {
      if (!isVid(minID)) throw new InvalidConfigError("incorrect trunk minID parameter");
      if (!isVid(maxID)) throw new InvalidConfigError("incorrect trunk maxID parameter");
      if (maxID < minID) throw new InvalidConfigError("minID is greater than maxID in trunk parameter");
      for (let v = minID; v <= maxID; v++) vids.add(v);
    } else if (minID === undefined && maxID !== undefined) {
      throw new InvalidConfigError("minID and maxID should be configured simultaneously, minID is missing");
    } else if (minID !== undefined && maxID === undefined) {
      throw new InvalidConfigError("minID and maxID should be configured simultaneously, maxID is missing");
    }
    if (id !== undefined) {
      if (!isVid(id)) throw new InvalidConfigError("incorrect trunk id parameter");
      vids.add(id);
    }
  }
  return [...vids].sort((a, b) => a - b);
}
