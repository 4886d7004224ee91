import { describe, expect, test } from "bun:test";
import { invalidMacMessage, isValidEtherAddr, parseHardwareAddr, parseMacAddress } from "./mac-address.ts";

describe("parseMacAddress (Go net.ParseMAC, 6-byte forms)", () => {
  test("accepts colon, dash and dotted forms, normalised to lower-case colons", () => {
    expect(parseMacAddress("02:AA:bb:00:11:22")).toBe("02:aa:bb:00:11:22");
    expect(parseMacAddress("02-aa-bb-00-11-22")).toBe("02:aa:bb:00:11:22");
    expect(parseMacAddress("02aa.bb00.1122")).toBe("02:aa:bb:00:11:22");
  });
  test("rejects mixed separators, short and long forms", () => {
    for (const s of ["02:aa-bb:00:11:22", "02:aa:bb:00:11", "zz:aa:bb:00:11:22", "", "02:aa:bb:00:11:22:33", "02:00:5e:10:00:00:00:01", "02aabb001122", "02:aa:bb:00:11:22:"]) {
      expect(parseMacAddress(s)).toBeUndefined();
    }
  });
  test("Go's error text", () => {
    expect(invalidMacMessage("x")).toBe("address x: invalid MAC address");
  });
});

describe("parseHardwareAddr (Go net.ParseMAC, every length)", () => {
  test("6, 8 and 20 bytes in each form", () => {
    expect(parseHardwareAddr("0A:1b:2C:3d:4E:5f")).toBe("0a:1b:2c:3d:4e:5f");
    expect(parseHardwareAddr("02:00:5e:10:00:00:00:01")).toBe("02:00:5e:10:00:00:00:01");
    expect(parseHardwareAddr("0200.5e10.0000.0001")).toBe("02:00:5e:10:00:00:00:01");
    const ipoib = "00-00-00-00-fe-80-00-00-00-00-00-00-02-00-5e-10-00-00-00-01";
    expect(parseHardwareAddr(ipoib)).toBe(ipoib.replaceAll("-", ":"));
  });
  test("other lengths and malformed groups", () => {
    for (const bad of ["", "0a:1b:2c:3d:4e", "0a:1b:2c:3d:4e:5g", "0a:1b-2c:3d:4e:5f", "0a1b2c3d4e5f", "0a:1b:2c:3d:4e:5f:", "0a:1b:2c:3d:4e:5f:00", "0a1b.2c3d"]) {
      expect(parseHardwareAddr(bad)).toBeUndefined();
    }
  });
});

describe("isValidEtherAddr (kernel is_valid_ether_addr)", () => {
  test.each(["0a:58:0a:47:00:99", "02:00:00:00:00:01", "A8-BB-CC-DD-EE-FF"])("accepts %p", (mac) => {
    expect(isValidEtherAddr(mac)).toBe(true);
  });
  test.each(["00:00:00:00:00:00", "01:00:5e:00:00:01", "ff:ff:ff:ff:ff:ff", "33:33:00:00:00:01", "zz", "00:00:00:00:00:00:00:01"])("refuses %p", (mac) => {
    expect(isValidEtherAddr(mac)).toBe(false);
  });
});
