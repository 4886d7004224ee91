import { describe, expect, test } from "bun:test";
import type { CmdArgs } from "../cni/types.ts";
import { containerInterfaceOf, requirePrevResult } from "./check.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

function argsWith(prevResult: unknown): CmdArgs {
  const config: Record<string, unknown> = { cniVersion: "1.0.0", name: "n", type: "x" };
  if (prevResult !== undefined) config.prevResult = prevResult;
  return withDelegate({
    command: "CHECK",
    containerID: "c",
    netns: "/var/run/netns/c",
    ifName: "eth0",
    args: "",
    path: "",
    stdinData: new TextEncoder().encode(JSON.stringify(config)),
    config,
    cniVersion: "1.0.0",
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return "<no error>";
}

describe("CHECK: prevResult and its container interface, in each plugin's upstream wording", () => {
  test("Required prevResult missing, with the plugin's prefix or lower-case", () => {
    const none = argsWith(undefined);
    expect(message(() => requirePrevResult(none))).toBe("Required prevResult missing");
    expect(message(() => requirePrevResult(none, { prevResultPrefix: "vlan: " }))).toBe("vlan: Required prevResult missing");
    expect(message(() => requirePrevResult(none, { lowerCase: true }))).toBe("required prevResult missing");
  });

  test("the interface named CNI_IFNAME in this sandbox, else upstream's sandbox message", () => {
    const args = argsWith({
      cniVersion: "1.0.0",
      interfaces: [
        { name: "eth0", sandbox: "/elsewhere" },
        { name: "eth0", mac: "02:00:00:00:00:01", sandbox: "/var/run/netns/c" },
      ],
    });
    const prev = requirePrevResult(args);
    expect(containerInterfaceOf(prev, args)).toEqual({ name: "eth0", mac: "02:00:00:00:00:01", sandbox: "/var/run/netns/c" });
    const other = { ...args, netns: "/var/run/netns/d" };
    expect(message(() => containerInterfaceOf(prev, other))).toBe("Sandbox in prevResult  doesn't match configured netns: /var/run/netns/d");
    expect(message(() => containerInterfaceOf(prev, other, { lowerCase: true }))).toBe(
      "sandbox in prevResult  doesn't match configured netns: /var/run/netns/d",
    );
  });
});
