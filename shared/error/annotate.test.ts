import { describe, expect, test } from "bun:test";
import { AnnotatedError, annotate, annotateError, causeChain, messageOf } from "./annotate.ts";

describe("annotate", () => {
  test("prepends context and keeps the cause", () => {
    const cause = new RangeError("boom");
    const err = annotateError("failed to do X", cause);
    expect(err).toBeInstanceOf(AnnotatedError);
    expect(err.message).toBe("failed to do X: boom");
    expect(err.cause).toBe(cause);
    expect(err.context).toBe("failed to do X");
  });

  test("sync: returns the value, annotates a throw", () => {
    expect(annotate("ctx", () => 42)).toBe(42);
    expect(() =>
      annotate("ctx", () => {
        throw new Error("inner");
      }),
    ).toThrow("ctx: inner");
  });

  test("async: annotates a rejection, passes a value", async () => {
    expect(await annotate("ctx", async () => 7)).toBe(7);
    await expect(
      annotate("ctx", async () => {
        throw new Error("late");
      }),
    ).rejects.toThrow("ctx: late");
  });

  test("nesting reads like Go's %v wrapping", () => {
    const err = annotateError("outer", annotateError("middle", new Error("root")));
    expect(err.message).toBe("outer: middle: root");
    expect([...causeChain(err)].map(messageOf)).toEqual(["outer: middle: root", "middle: root", "root"]);
  });

  test("non-Error values", () => {
    expect(annotateError("ctx", "text").message).toBe("ctx: text");
    expect([...causeChain("x")]).toEqual(["x"]);
  });
});
