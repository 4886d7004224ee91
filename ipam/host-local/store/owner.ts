/**
 * Who owns a reservation, as recorded in a reservation file. The on-disk content is upstream's:
 * `<containerID trimmed>\r\n<ifname>` with no trailing newline; files written before ifnames were
 * recorded hold only the container ID ("legacy"). Matching compares the whitespace-trimmed file
 * content with these keys, exactly as upstream `backend/disk/backend.go` does.
 */
import { goTrimSpace } from "../../../shared/ipam/go-strings.ts";

export { goTrimSpace } from "../../../shared/ipam/go-strings.ts";

/** Separator between container ID and ifname inside a reservation file. */
export const LINE_BREAK = "\r\n";

/** The exact bytes upstream writes into a reservation file (also the match key). */
export function reservationContent(containerID: string, ifname: string): string {
  return goTrimSpace(containerID) + LINE_BREAK + ifname;
}

/** The key a legacy (container-ID-only) reservation file matches. */
export function legacyKey(containerID: string): string {
  return goTrimSpace(containerID);
}

/** A reservation owner, decoded from a trimmed file content. */
export type Owner =
  | { kind: "attachment"; containerID: string; ifname: string }
  | { kind: "legacy"; containerID: string }
  /** Empty, whitespace-only or unreadable: no DEL can ever match it. */
  | { kind: "none" };

/** Decodes a trimmed reservation content (null = unreadable). */
export function parseOwner(key: string | null): Owner {
  if (key === null || key === "") return { kind: "none" };
  const i = key.indexOf(LINE_BREAK);
  if (i < 0) return { kind: "legacy", containerID: key };
  return { kind: "attachment", containerID: key.slice(0, i), ifname: key.slice(i + LINE_BREAK.length) };
}
