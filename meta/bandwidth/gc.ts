/**
 * GC (spec 1.1.0; upstream's bandwidth has none): deletes this network's host IFBs whose attachment
 * is not in `cni.dev/valid-attachments`. Shaping from inside a container netns (site.ts) leaves
 * nothing in the host, and goes away with the netns.
 *
 * IFB names are hashes and carry no network name, so an IFB is collected only when it can be
 * attributed to THIS network: it carries our alias (`cni-bandwidth <containerID> <ifName>`) and its
 * name is the one this network gives that attachment (ifb-name.ts ifbAttachment). Another network's
 * IFBs, and IFBs without our alias (made by the Go plugin, which records no owner), are never
 * touched. A redirect filter of ours that still feeds a collected IFB (its host veth outlived the
 * attachment) is removed first, so no device is left redirecting into nothing.
 */
import type { ValidAttachment } from "../../shared/cni/types.ts";
import { annotate } from "../../shared/error/annotate.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { teardown, type TeardownStep } from "../../shared/undo/teardown.ts";
import { deleteIfb } from "./ifb.ts";
import { ifbAttachment } from "./ifb-name.ts";
import { redirectSources, removeRedirects } from "./tc-setup.ts";

/** This network's IFBs in `nl` whose attachment is not valid. */
export function staleIfbs(nl: Handle, network: string, valid: readonly ValidAttachment[]): Link[] {
  const keep = new Set(valid.map((a) => `${a.containerID}\n${a.ifName}`));
  return nl.linkList().filter((l) => {
    if (l.kind !== "ifb") return false;
    const owner = ifbAttachment(l, network);
    return owner !== undefined && !keep.has(`${owner.containerID}\n${owner.ifName}`);
  });
}

/** Deletes the stale IFBs (and the redirects into them); every IFB is tried, failures are reported together. */
export async function collectIfbs(nl: Handle, network: string, valid: readonly ValidAttachment[]): Promise<void> {
  const stale = staleIfbs(nl, network, valid);
  if (stale.length === 0) return;
  const sources = redirectSources(nl, new Set(stale.map((l) => l.index)));
  const steps: TeardownStep[] = stale.map((ifb) => ({
    name: ifb.name,
    run: () =>
      annotate(`failed to garbage-collect IFB ${ifb.name}`, () => {
        for (const dev of sources.get(ifb.index) ?? []) removeRedirects(nl, dev, ifb.index);
        deleteIfb(nl, ifb.index);
      }),
  }));
  await teardown(steps);
}
