import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { QEMU_USER_LACKS } from "../../test/harness/aarch64-emulation.ts";
import { skipWhenEmulated } from "../../test/harness/arch.ts";
import { withNetNS } from "../netns/enter.ts";
import { createScratchNetns, skipUnlessRoot } from "../netns/testing.ts";
import { close } from "../sys/libc.ts";
import { NETLINK_ROUTE } from "./constants/netlink.ts";
import { NETLINK_NETFILTER } from "./constants/nfnetlink.ts";
import { closeNetfilterSocketsAtExit, deferNetfilterReleases, MAX_HELD_RELEASES } from "./netfilter-release.ts";
import { openNetlinkSocket } from "./kernel-transport.ts";

const isOpen = (fd: number) => existsSync(`/proc/self/fd/${fd}`);

const SKIP =
  skipUnlessRoot("netfilter socket releases") ||
  skipWhenEmulated("netfilter socket releases", QEMU_USER_LACKS.nfnetlink);

describe.skipIf(SKIP)("closing NETLINK_NETFILTER sockets (netfilter-release.ts)", () => {
  afterEach(() => deferNetfilterReleases(undefined));

  test("without a releaser every socket is closed at once", () => {
    const s = openNetlinkSocket(NETLINK_NETFILTER);
    const fd = s.fd;
    s.close();
    expect(isOpen(fd)).toBe(false);
  });

  test("with one, a netfilter socket of the process's netns goes to it open; other protocols close at once", () => {
    const taken: number[] = [];
    deferNetfilterReleases((fd) => taken.push(fd));
    const nf = openNetlinkSocket(NETLINK_NETFILTER);
    const route = openNetlinkSocket(NETLINK_ROUTE);
    const [nfFd, routeFd] = [nf.fd, route.fd];
    nf.close();
    route.close();
    nf.close(); // a second close does nothing
    expect(taken).toEqual([nfFd]);
    expect(isOpen(nfFd)).toBe(true);
    expect(isOpen(routeFd)).toBe(false);
    close(nfFd);
  });

  test("a netfilter socket opened in another netns is closed at once (it must not keep that netns alive)", () => {
    const taken: number[] = [];
    deferNetfilterReleases((fd) => taken.push(fd));
    using scratch = createScratchNetns();
    const s = withNetNS(scratch.ns, () => openNetlinkSocket(NETLINK_NETFILTER));
    const fd = s.fd;
    s.close();
    expect(taken).toEqual([]);
    expect(isOpen(fd)).toBe(false);
  });

  test("in a plugin process (closeNetfilterSocketsAtExit) a netfilter socket of any netns stays open for the exit to close", () => {
    closeNetfilterSocketsAtExit();
    using scratch = createScratchNetns();
    const here = openNetlinkSocket(NETLINK_NETFILTER);
    const there = withNetNS(scratch.ns, () => openNetlinkSocket(NETLINK_NETFILTER));
    const route = openNetlinkSocket(NETLINK_ROUTE);
    const fds = [here.fd, there.fd, route.fd];
    for (const s of [here, there, route]) s.close();
    expect(fds.map(isOpen)).toEqual([true, true, false]);
    close(fds[0]!);
    close(fds[1]!);
  });

  test("a releaser keeps at most MAX_HELD_RELEASES descriptors back: past it the oldest is closed at once", () => {
    closeNetfilterSocketsAtExit();
    const fds: number[] = [];
    for (let i = 0; i <= MAX_HELD_RELEASES; i++) {
      const s = openNetlinkSocket(NETLINK_NETFILTER);
      fds.push(s.fd);
      s.close();
    }
    expect(isOpen(fds[0]!)).toBe(false);
    expect(fds.slice(1).every(isOpen)).toBe(true);
    for (const fd of fds.slice(1)) close(fd);
  });

  test("a releaser removed after the open: the close happens at once", () => {
    deferNetfilterReleases(() => {
      throw new Error("not called");
    });
    const s = openNetlinkSocket(NETLINK_NETFILTER);
    const fd = s.fd;
    deferNetfilterReleases(undefined);
    s.close();
    expect(isOpen(fd)).toBe(false);
  });
});
