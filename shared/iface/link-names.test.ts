import { describe, expect, test } from "bun:test";
import { randomVethName } from "./link-names.ts";

describe("randomVethName", () => {
  test("is veth + 8 lower-case hex characters", () => {
    for (let i = 0; i < 200; i++) expect(randomVethName()).toMatch(/^veth[0-9a-f]{8}$/);
  });
  test("does not repeat across many draws", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(randomVethName());
    // 2000 draws out of 2^32: a collision here means the generator is broken.
    expect(seen.size).toBe(2000);
  });
});
