/**
 * GC for host-local (spec 1.1.0; upstream has none: its main.go says "FIXME GC"). The runtime passes the
 * attachments that are still alive in `cni.dev/valid-attachments` (or the older
 * `cni.dev/attachments`: shared/cni/netconf.ts gcAttachmentList); under the store lock every
 * reservation whose owner is not among them is released:
 * - `<id>\r\n<ifname>` files: kept only if (id, ifname) is valid;
 * - legacy `<id>` files: kept if any attachment of container `id` is valid (they record no ifname);
 * - empty, whitespace-only or unreadable files (left by a crash between create and write,
 *   upstream #498): no DEL can ever match them, so they are always reclaimed.
 * A config without the key is a no-op (never "release everything"); an empty list releases all.
 * Only reservation files (named by an IP) directly in this network's directory are considered.
 */
import { decode, t } from "../../shared/cni/decode.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { GC_ATTACHMENT_KEYS, gcAttachmentList } from "../../shared/cni/netconf.ts";
import { parseOwner } from "./store/owner.ts";
import type { Store } from "./store/store.ts";

export interface Attachment {
  containerID: string;
  ifname: string;
}

const attachmentList = t.array(t.object("GCAttachment", { containerID: t.string(), ifname: t.string() }));
const gcArgsSchema = t.object("GCArgs", Object.fromEntries(GC_ATTACHMENT_KEYS.map((key) => [key, attachmentList])));

/**
 * The valid attachments of a GC call, or undefined when the config carries no list; a malformed
 * list is code 7 naming its key (Go's decoding error).
 */
export function parseValidAttachments(config: Record<string, unknown>): Attachment[] | undefined {
  const found = gcAttachmentList(config);
  if (found === undefined) return undefined;
  const list = (decode(gcArgsSchema, { [found.key]: found.list })[found.key] ?? []) as ({ containerID?: string; ifname?: string } | undefined)[];
  return list
    .filter((a) => a !== undefined)
    .map((a) => ({ containerID: a.containerID ?? "", ifname: a.ifname ?? "" }));
}

/**
 * Releases every reservation not owned by a valid attachment. The caller holds the lock. Returns
 * the released count; reservations that could not be removed are reported together at the end.
 */
export function collectGarbage(store: Store, valid: readonly Attachment[]): number {
  const pairs = new Set(valid.map((a) => `${a.containerID}\u0000${a.ifname}`));
  const containers = new Set(valid.map((a) => a.containerID));
  let released = 0;
  const failures: string[] = [];
  for (const r of store.reservations()) {
    const owner = parseOwner(r.key);
    const keep =
      owner.kind === "attachment"
        ? pairs.has(`${owner.containerID}\u0000${owner.ifname}`)
        : owner.kind === "legacy"
          ? containers.has(owner.containerID)
          : false;
    if (keep) continue;
    try {
      if (store.releaseReservation(r)) released++;
    } catch (err) {
      failures.push(messageOf(err));
    }
  }
  if (failures.length > 0) throw new InternalError(failures.join("; "));
  return released;
}
