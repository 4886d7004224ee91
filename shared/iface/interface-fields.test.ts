import { describe, expect, test } from "bun:test";
import { formatResult } from "../cni/result/format.ts";
import { v11InterfaceFields } from "./interface-fields.ts";

describe("v11InterfaceFields", () => {
  test("1.1.0 (and later) get mtu and pciID; zero and empty values are left out", () => {
    expect(v11InterfaceFields("1.1.0", { mtu: 1400, pciID: "0000:00:1f.6" })).toEqual({ mtu: 1400, pciID: "0000:00:1f.6" });
    expect(v11InterfaceFields("1.2.0", { mtu: 9000 })).toEqual({ mtu: 9000 });
    expect(v11InterfaceFields("1.1.0", { mtu: 0, pciID: "" })).toEqual({});
    expect(v11InterfaceFields("1.1.0", {})).toEqual({});
  });

  test("earlier versions get neither (1.0.0 does not define them)", () => {
    for (const v of ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]) {
      expect(v11InterfaceFields(v, { mtu: 1400, pciID: "0000:00:1f.6" })).toEqual({});
    }
  });

  test("printed in a 1.1.0 result, dropped by the conversion to 0.4.0", () => {
    const result = { interfaces: [{ name: "eth0", sandbox: "/run/netns/x", ...v11InterfaceFields("1.1.0", { mtu: 1400, pciID: "0000:00:1f.6" }) }] };
    expect(JSON.parse(formatResult(result, "1.1.0")).interfaces).toEqual([{ name: "eth0", sandbox: "/run/netns/x", mtu: 1400, pciID: "0000:00:1f.6" }]);
    expect(JSON.parse(formatResult(result, "0.4.0")).interfaces).toEqual([{ name: "eth0", sandbox: "/run/netns/x" }]);
  });
});
