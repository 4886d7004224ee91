/**
 * Moving a host device into a container and back, through a temporary namespace (upstream HEAD
 * `moveLinkIn` / `moveLinkOut`). Every step is undone, newest first, when a later step fails, so a
 * failed ADD leaves the device in the host under its own name (UP again if it was) and a failed DEL
 * leaves it in the container under CNI_IFNAME (UP again if it was) — ready for a retry.
 *
 * In:  host ──netns──▶ temp: rename to CNI_IFNAME, alias = host name ──netns──▶ container: up
 * Out: container ──netns──▶ temp: rename to the alias, clear the alias ──netns──▶ host (left down)
 */
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { Handle, isNotFound, type Link } from "../../shared/netlink/index.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import type { NetNS } from "../../shared/netns/index.ts";
import { createTempNetns } from "./temp-netns.ts";

/** A stack of undo steps; `unwind` runs them newest first and ignores their failures. */
class UndoStack {
  readonly #steps: (() => void)[] = [];
  push(step: () => void): void {
    this.#steps.push(step);
  }
  unwind(): void {
    for (let step = this.#steps.pop(); step !== undefined; step = this.#steps.pop()) {
      try {
        step();
      } catch {
        // best effort: the remaining steps still run
      }
    }
  }
}

function step<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new InternalError(`${what}: ${messageOf(err)}`, { cause: err });
  }
}

function openTemp(): { temp: NetNS; tempNl: Handle } {
  const temp = step("failed to create tempNS", () => createTempNetns());
  try {
    return { temp, tempNl: Handle.open(temp) };
  } catch (err) {
    temp.close();
    throw new InternalError(`failed to create tempNS: ${messageOf(err)}`, { cause: err });
  }
}

export interface MoveInOptions {
  hostNl: Handle;
  hostNs: NetNS;
  containerNl: Handle;
  containerNs: NetNS;
  /** The host link to move. */
  hostDev: Link;
  /** CNI_IFNAME: its name in the container. */
  ifName: string;
}

/** Moves `hostDev` into the container as `ifName`, alias = its host name, UP. Returns the container link. */
export function moveLinkIn(o: MoveInOptions): Link {
  const { hostNl, hostNs, containerNl, containerNs, ifName } = o;
  const hostName = o.hostDev.name;
  const { temp, tempNl } = openTemp();
  const undo = new UndoStack();
  try {
    // Moving between namespaces takes a link down: restore the host's UP state on failure.
    if ((o.hostDev.flags & IFF_UP) !== 0) undo.push(() => hostNl.linkSetUp(hostNl.linkByName(hostName).index));

    step(`failed to move ${JSON.stringify(hostName)} to tempNS`, () => hostNl.linkSetNetnsFd(o.hostDev.index, temp.fd));
    // Where the device is in tempNS and under which name (the undo steps look it up again).
    let tempName = hostName;
    const inTemp = (): number => tempNl.linkByName(tempName).index;
    const staged = step(`failed to find ${JSON.stringify(hostName)} in tempNS`, () => tempNl.linkByName(hostName));
    undo.push(() => tempNl.linkSetNetnsFd(inTemp(), hostNs.fd));

    step(`failed to rename host device ${JSON.stringify(hostName)} to ${JSON.stringify(ifName)}`, () => tempNl.linkSetName(staged.index, ifName));
    tempName = ifName;
    undo.push(() => {
      tempNl.linkSetName(inTemp(), hostName);
      tempName = hostName;
    });

    step(`failed to set alias to ${JSON.stringify(hostName)}`, () => tempNl.linkSetAlias(staged.index, hostName));
    undo.push(() => tempNl.linkSetAlias(inTemp(), ""));

    step(`failed to move ${JSON.stringify(ifName)} (host: ${JSON.stringify(hostName)}) to container NS`, () =>
      tempNl.linkSetNetnsFd(staged.index, containerNs.fd),
    );
    undo.push(() => containerNl.linkSetNetnsFd(containerNl.linkByName(ifName).index, temp.fd));

    const placed = step(`failed to find ${JSON.stringify(ifName)} in container NS`, () => containerNl.linkByName(ifName));
    step(`failed to set ${JSON.stringify(ifName)} up`, () => containerNl.linkSetUp(placed.index));
    return step(`failed to find ${JSON.stringify(ifName)} in container NS`, () => containerNl.linkByName(ifName));
  } catch (err) {
    undo.unwind();
    throw err;
  } finally {
    tempNl.close();
    temp.close();
  }
}

export interface MoveOutOptions {
  hostNs: NetNS;
  containerNl: Handle;
  containerNs: NetNS;
  ifName: string;
}

/** What {@link moveLinkOut} found and did. */
export type MoveOutOutcome =
  /** Returned to the host under `hostName` (left down, as upstream: its previous state is unknown). */
  | { status: "moved"; hostName: string }
  /** No CNI_IFNAME in the container: already returned (DEL twice) or never added. */
  | { status: "absent" }
  /** CNI_IFNAME exists but carries no alias, so it is not a device host-device moved in: left alone. */
  | { status: "not-ours" };

/** Returns the container's `ifName` to the host under the name kept in its alias, alias cleared. */
export function moveLinkOut(o: MoveOutOptions): MoveOutOutcome {
  const { hostNs, containerNl, containerNs, ifName } = o;
  let dev: Link;
  try {
    dev = containerNl.linkByName(ifName);
  } catch (err) {
    if (isNotFound(err)) return { status: "absent" };
    throw new InternalError(`failed to find ${JSON.stringify(ifName)} in containerNS: ${messageOf(err)}`, { cause: err });
  }
  const hostName = dev.alias ?? "";
  if (hostName === "") return { status: "not-ours" };

  const { temp, tempNl } = openTemp();
  const undo = new UndoStack();
  try {
    if ((dev.flags & IFF_UP) !== 0) undo.push(() => containerNl.linkSetUp(containerNl.linkByName(ifName).index));

    step(`failed to move ${JSON.stringify(ifName)} to tempNS`, () => containerNl.linkSetNetnsFd(dev.index, temp.fd));
    let tempName = ifName;
    const inTemp = (): number => tempNl.linkByName(tempName).index;
    const staged = step(`failed to find ${JSON.stringify(ifName)} in tempNS`, () => tempNl.linkByName(ifName));
    undo.push(() => tempNl.linkSetNetnsFd(inTemp(), containerNs.fd));

    step(`failed to rename device ${JSON.stringify(ifName)} to ${JSON.stringify(hostName)}`, () => tempNl.linkSetName(staged.index, hostName));
    tempName = hostName;
    undo.push(() => {
      tempNl.linkSetName(inTemp(), ifName);
      tempName = ifName;
    });

    step(`failed to unset alias of ${JSON.stringify(hostName)}`, () => tempNl.linkSetAlias(staged.index, ""));
    undo.push(() => tempNl.linkSetAlias(inTemp(), hostName));

    step(`failed to move ${JSON.stringify(hostName)} to hostNS`, () => tempNl.linkSetNetnsFd(staged.index, hostNs.fd));
    return { status: "moved", hostName };
  } catch (err) {
    undo.unwind();
    throw err;
  } finally {
    tempNl.close();
    temp.close();
  }
}
