import { describe, expect, test } from "bun:test";
import { InvalidConfigError, toErrorJson, TryAgainLaterError } from "../cni/errors.ts";
import { teardown, TeardownError, Undo, type TeardownStep } from "./teardown.ts";

function recorder(fail: Record<string, unknown> = {}): { steps: TeardownStep[]; ran: string[] } {
  const ran: string[] = [];
  const step = (name: string): TeardownStep => ({
    name,
    run: async () => {
      ran.push(name);
      if (name in fail) throw fail[name];
    },
  });
  return { steps: [step("IPAM"), step("link"), step("rules")], ran };
}

describe("teardown (DEL)", () => {
  test("runs every step in order", async () => {
    const { steps, ran } = recorder();
    await teardown(steps);
    expect(ran).toEqual(["IPAM", "link", "rules"]);
  });

  test("a failing IPAM step does not stop the rest; its own error (and code) comes out", async () => {
    const ipamErr = new TryAgainLaterError("lock busy");
    const { steps, ran } = recorder({ IPAM: ipamErr });
    await expect(teardown(steps)).rejects.toBe(ipamErr);
    expect(ran).toEqual(["IPAM", "link", "rules"]);
  });

  test("several failures are reported together", async () => {
    const { steps, ran } = recorder({ IPAM: new Error("a"), rules: new Error("c") });
    const err = await teardown(steps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TeardownError);
    expect((err as TeardownError).message).toBe("a; c");
    expect((err as TeardownError).errors).toHaveLength(2);
    expect(ran).toEqual(["IPAM", "link", "rules"]);
  });
});

describe("Undo (ADD)", () => {
  test("runs only reached steps, in teardown order, and rethrows the original error", async () => {
    const { steps, ran } = recorder({ link: new Error("undo failed") });
    const warnings: string[] = [];
    const undo = new Undo(steps, (text) => warnings.push(text));
    undo.reached("rules");
    undo.reached("link");
    const cause = new InvalidConfigError("the real problem");
    await expect(undo.rollback(cause)).rejects.toBe(cause);
    expect(ran).toEqual(["link", "rules"]);
    // The failed step is reported to the invocation's stderr, not in place of the cause.
    expect(warnings).toEqual(["rollback of link failed: undo failed\n"]);
  });

  test("nothing reached: nothing runs", async () => {
    const { steps, ran } = recorder();
    const cause = new Error("early");
    await expect(new Undo(steps, () => {}).rollback(cause)).rejects.toBe(cause);
    expect(ran).toEqual([]);
  });

  test("an unknown step name is a programming error", () => {
    const { steps } = recorder();
    expect(() => new Undo(steps, () => {}).reached("nope")).toThrow(TypeError);
  });
});

describe("TeardownError's CNI code (shared/cni/errors.ts)", () => {
  test("several failures are 999, whatever their own codes; the message names each", () => {
    const err = new TeardownError([new TryAgainLaterError("lock busy"), new InvalidConfigError("bad")]);
    expect(toErrorJson(err)).toEqual({ code: 999, msg: "lock busy; bad" });
  });
  test("one failure keeps its code", () => {
    expect(toErrorJson(new TeardownError([new TryAgainLaterError("lock busy")]))).toEqual({ code: 11, msg: "lock busy" });
  });
});
