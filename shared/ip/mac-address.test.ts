import { describe, expect, test } from "bun:test";
import { invalidMacMessage, parseMacAddress } from "./mac-address.ts";

describe("parseMacAddress (Go net.ParseMAC, 6-byte forms)", () => {
  test("accepts colon, dash and dotted forms, normalised to lower-case colons", () => {
    expect(parseMacAddress("02:AA:bb:00:11:22")).toBe("02:aa:bb:00:11:22");
    expect(parseMacAddress("02-aa-bb-00-11-22")).toBe("02:aa:bb:00:11:22");
    expect(parseMacAddress("02aa.bb00.1122")).toBe("02:aa:bb:00:11:22");
  });
  test("rejects mixed separators, short and long forms", () => {
    for (const s of ["02:aa-bb:00:11:22", "02:aa:bb:00:11", "zz:aa:bb:00:11:22", "", "02:aa:bb:00:11:22:33"]) expect(parseMacAddress(s)).toBeUndefined();
  });
  test("Go's error text", () => {
    expect(invalidMacMessage("x")).toBe("address x: invalid MAC address");
  });
});
