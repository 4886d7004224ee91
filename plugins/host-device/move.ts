/**
 * Moving a host device into a container and back, through a temporary namespace (upstream HEAD
 * `moveLinkIn` / `moveLinkOut`). Each move is undone step by step (shared/undo/teardown.ts Undo)
 * when a later step fails, so a failed move in leaves the device in the host under its own name (UP
 * again if it was) and a failed move out leaves it in the container under CNI_IFNAME (UP again if
 * it was) — ready for a retry.
 *
 * In:  host ──netns──▶ temp: rename to CNI_IFNAME, alias = host name ──netns──▶ container: up
 * Out: container ──netns──▶ temp: rename to the alias, clear the alias ──netns──▶ host (left down)
 */
import { annotate } from "../../shared/error/annotate.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { createTempNetNS } from "../../shared/netns/temp.ts";
import type { NetNS } from "../../shared/netns/netns.ts";
import { Undo } from "../../shared/undo/teardown.ts";

/** A temporary namespace and a Handle in it; dispose closes both (destroying the namespace). */
function openTemp(): { temp: NetNS; tempNl: Handle } & Disposable {
  return annotate("failed to create tempNS", () => {
    const temp = createTempNetNS();
    try {
      const tempNl = Handle.open(temp);
      return {
        temp,
        tempNl,
        [Symbol.dispose]: () => {
          tempNl.close();
          temp.close();
        },
      };
    } catch (err) {
      temp.close();
      throw err;
    }
  });
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
  /** Where a failed rollback step is reported (the invocation's stderr). */
  warn(text: string): void;
}

/** Moves `hostDev` into the container as `ifName`, alias = its host name, UP. Returns the container link. */
export async function moveLinkIn(o: MoveInOptions): Promise<Link> {
  const { hostNl, hostNs, containerNl, containerNs, ifName } = o;
  const hostName = o.hostDev.name;
  using staging = openTemp();
  const { temp, tempNl } = staging;
  // Where the device is in tempNS and under which name (the undo steps look it up again).
  let tempName = hostName;
  const inTemp = (): number => tempNl.linkByName(tempName).index;
  const undo = new Undo([
    { name: "in container", run: () => containerNl.linkSetNetnsFd(containerNl.linkByName(ifName).index, temp.fd) },
    { name: "alias", run: () => tempNl.linkSetAlias(inTemp(), "") },
    {
      name: "name",
      run: () => {
        tempNl.linkSetName(inTemp(), hostName);
        tempName = hostName;
      },
    },
    { name: "in tempNS", run: () => tempNl.linkSetNetnsFd(inTemp(), hostNs.fd) },
    // Moving between namespaces takes a link down: the host's UP state comes back last.
    { name: "down", run: () => hostNl.linkSetUp(hostNl.linkByName(hostName).index) },
  ], o.warn);
  try {
    if ((o.hostDev.flags & IFF_UP) !== 0) undo.reached("down");
    annotate(`failed to move ${JSON.stringify(hostName)} to tempNS`, () => hostNl.linkSetNetnsFd(o.hostDev.index, temp.fd));
    undo.reached("in tempNS");
    const staged = annotate(`failed to find ${JSON.stringify(hostName)} in tempNS`, () => tempNl.linkByName(hostName));
    annotate(`failed to rename host device ${JSON.stringify(hostName)} to ${JSON.stringify(ifName)}`, () => tempNl.linkSetName(staged.index, ifName));
    tempName = ifName;
    undo.reached("name");
    annotate(`failed to set alias to ${JSON.stringify(hostName)}`, () => tempNl.linkSetAlias(staged.index, hostName));
    undo.reached("alias");
    annotate(`failed to move ${JSON.stringify(ifName)} (host: ${JSON.stringify(hostName)}) to container NS`, () =>
      tempNl.linkSetNetnsFd(staged.index, containerNs.fd),
    );
    undo.reached("in container");
    const placed = annotate(`failed to find ${JSON.stringify(ifName)} in container NS`, () => containerNl.linkByName(ifName));
    annotate(`failed to set ${JSON.stringify(ifName)} up`, () => containerNl.linkSetUp(placed.index));
    return annotate(`failed to find ${JSON.stringify(ifName)} in container NS`, () => containerNl.linkByName(ifName));
  } catch (err) {
    return await undo.rollback(err);
  }
}

export interface MoveOutOptions {
  hostNs: NetNS;
  containerNl: Handle;
  containerNs: NetNS;
  ifName: string;
  /** Where a failed rollback step is reported (the invocation's stderr). */
  warn(text: string): void;
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
export async function moveLinkOut(o: MoveOutOptions): Promise<MoveOutOutcome> {
  const { hostNs, containerNl, containerNs, ifName } = o;
  const dev = annotate(`failed to find ${JSON.stringify(ifName)} in containerNS`, () => containerNl.linkFind(ifName));
  if (dev === undefined) return { status: "absent" };
  const hostName = dev.alias ?? "";
  if (hostName === "") return { status: "not-ours" };

  using staging = openTemp();
  const { temp, tempNl } = staging;
  let tempName = ifName;
  const inTemp = (): number => tempNl.linkByName(tempName).index;
  const undo = new Undo([
    { name: "alias", run: () => tempNl.linkSetAlias(inTemp(), hostName) },
    {
      name: "name",
      run: () => {
        tempNl.linkSetName(inTemp(), ifName);
        tempName = ifName;
      },
    },
    { name: "in tempNS", run: () => tempNl.linkSetNetnsFd(inTemp(), containerNs.fd) },
    { name: "down", run: () => containerNl.linkSetUp(containerNl.linkByName(ifName).index) },
  ], o.warn);
  try {
    if ((dev.flags & IFF_UP) !== 0) undo.reached("down");
    annotate(`failed to move ${JSON.stringify(ifName)} to tempNS`, () => containerNl.linkSetNetnsFd(dev.index, temp.fd));
    undo.reached("in tempNS");
    const staged = annotate(`failed to find ${JSON.stringify(ifName)} in tempNS`, () => tempNl.linkByName(ifName));
    annotate(`failed to rename device ${JSON.stringify(ifName)} to ${JSON.stringify(hostName)}`, () => tempNl.linkSetName(staged.index, hostName));
    tempName = hostName;
    undo.reached("name");
    annotate(`failed to unset alias of ${JSON.stringify(hostName)}`, () => tempNl.linkSetAlias(staged.index, ""));
    undo.reached("alias");
    annotate(`failed to move ${JSON.stringify(hostName)} to hostNS`, () => tempNl.linkSetNetnsFd(staged.index, hostNs.fd));
    return { status: "moved", hostName };
  } catch (err) {
    return await undo.rollback(err);
  }
}
