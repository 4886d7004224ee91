import { describe, expect, test } from "bun:test";
import { nsfsNetMounts } from "./node-addresses.ts";

describe("nsfsNetMounts", () => {
  test("network namespace files bind-mounted anywhere, octal escapes decoded; other namespaces and mounts ignored", () => {
    const info = [
      "42 26 0:4 net:[4026532637] /tmp/a\\040b rw - nsfs nsfs rw",
      "43 26 0:4 mnt:[4026532638] /tmp/m rw - nsfs nsfs rw",
      "44 26 0:5 / /proc rw shared:1 - proc proc rw",
      "45 26 0:4 net:[4026532640] /run/netns/cni-1 rw shared:5 - nsfs nsfs rw",
    ].join("\n");
    expect(nsfsNetMounts(info)).toEqual(["/tmp/a b", "/run/netns/cni-1"]);
  });
});
