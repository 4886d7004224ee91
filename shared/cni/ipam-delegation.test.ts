import { describe, expect, test } from "bun:test";
import { PROCESS_SCOPE } from "./call-scope.ts";
import { ipamStep, IPAM_STEP } from "./ipam-delegation.ts";
import type { CmdArgs } from "./types.ts";

describe("ipamStep", () => {
  const args = { command: "DEL", containerID: "c", netns: "", ifName: "eth0", args: "", path: "", stdinData: new Uint8Array(), config: {}, cniVersion: "1.0.0", env: {}, stderr: () => {}, scope: PROCESS_SCOPE } satisfies CmdArgs;

  test("without an IPAM type it does nothing", async () => {
    const step = ipamStep("", args);
    expect(step.name).toBe(IPAM_STEP);
    await step.run();
  });

  test("with one it runs IPAM DEL, whose failure (here: no CNI_PATH) is the step's own", async () => {
    await expect(Promise.resolve(ipamStep("host-local", args).run())).rejects.toThrow("no paths provided");
  });
});
