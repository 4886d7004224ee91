/**
 * GC configs as runtimes send the live attachments: SPEC.md's `cni.dev/valid-attachments`, the older
 * `cni.dev/attachments` alone (SPEC.md's name until cni#1103; a runtime written to that text), or
 * both (libcni, cni#1101), where the newer key wins. Plugin GC tests send the older key alone for the call that
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
