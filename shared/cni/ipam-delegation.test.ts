import { describe, expect, test } from "bun:test";
import { PROCESS_SCOPE } from "./call-scope.ts";
import { withDelegate } from "./delegate.ts";
import { delegateToIpam, ipamStep, IPAM_STEP } from "./ipam-delegation.ts";
import type { CmdArgs, Delegate } from "./types.ts";

const base = withDelegate({ command: "DEL", containerID: "c", netns: "", ifName: "eth0", args: "", path: "", stdinData: new Uint8Array(), config: {}, cniVersion: "1.0.0", env: {}, stderr: () => {}, scope: PROCESS_SCOPE });

/** `base` with a delegate that records what it is asked. */
function recording(): { args: CmdArgs; asked: string[] } {
  const asked: string[] = [];
  const delegate: Delegate = {
    add: async (type) => {
      asked.push(`ADD ${type}`);
      return {};
    },
    run: async (type, command) => {
      asked.push(`${command} ${type}`);
    },
  };
  return { args: { ...base, delegate }, asked };
}

describe("ipamStep", () => {
  test("without an IPAM type it does nothing", async () => {
    const { args, asked } = recording();
    const step = ipamStep("", args);
    expect(step.name).toBe(IPAM_STEP);
    await step.run();
    expect(asked).toEqual([]);
  });

  test("with one it runs IPAM DEL through the invocation's delegate", async () => {
    const { args, asked } = recording();
    await ipamStep("host-local", args).run();
    expect(asked).toEqual(["DEL host-local"]);
  });

  test("the delegate's failure (here: no CNI_PATH) is the step's own", async () => {
    await expect(Promise.resolve(ipamStep("host-local", base).run())).rejects.toThrow("no paths provided");
  });
});

describe("delegateToIpam", () => {
  test("passes STATUS and GC on to the IPAM plugin; nothing without one", async () => {
    const { args, asked } = recording();
    await delegateToIpam("", args, "STATUS");
    await delegateToIpam("static", args, "STATUS");
    await delegateToIpam("host-local", args, "GC");
    expect(asked).toEqual(["STATUS static", "GC host-local"]);
  });
});
