/**
 * GC configs as runtimes send the live attachments: SPEC.md's `cni.dev/valid-attachments`, the older
 * `cni.dev/attachments` alone (a runtime on an older libcni), or both (libcni on main, cni#1101,
 * #1103), where the newer key wins. Plugin GC tests send the older key alone for the call that
 * collects, and both keys with different lists before it, so that either mistake shows.
 */
export type GcList = { containerID: string; ifname: string }[];

/** `list` under the older key only. */
export function olderGcKey(list: GcList): Record<string, unknown> {
  return { "cni.dev/attachments": list };
}

/** Both keys with different lists: `newer` must be the one used. */
export function bothGcKeys(newer: GcList, older: GcList): Record<string, unknown> {
  return { "cni.dev/valid-attachments": newer, "cni.dev/attachments": older };
}
