import { describe, expect, test } from "bun:test";
import { gcAttachmentList, lenientForDel, validAttachmentsOf } from "./netconf.ts";

const A = [{ containerID: "a", ifname: "eth0" }];
const B = [{ containerID: "b", ifname: "net1" }];

describe("GC attachment list", () => {
  test("SPEC.md's cni.dev/valid-attachments, or the older cni.dev/attachments alone (a runtime written to SPEC.md before cni#1103)", () => {
    expect(validAttachmentsOf({ "cni.dev/valid-attachments": A })).toEqual([{ containerID: "a", ifName: "eth0" }]);
    expect(validAttachmentsOf({ "cni.dev/attachments": B })).toEqual([{ containerID: "b", ifName: "net1" }]);
    expect(gcAttachmentList({ "cni.dev/attachments": B })).toEqual({ key: "cni.dev/attachments", list: B });
  });

  test("the newer key wins when both are present (libcni sends both), also when its list is empty or malformed", () => {
    expect(validAttachmentsOf({ "cni.dev/attachments": B, "cni.dev/valid-attachments": A })).toEqual([{ containerID: "a", ifName: "eth0" }]);
    expect(validAttachmentsOf({ "cni.dev/valid-attachments": [], "cni.dev/attachments": B })).toEqual([]);
    expect(validAttachmentsOf({ "cni.dev/valid-attachments": "nope", "cni.dev/attachments": B })).toBeUndefined();
    expect(gcAttachmentList({ "cni.dev/valid-attachments": [], "cni.dev/attachments": B })?.key).toBe("cni.dev/valid-attachments");
  });

  test("a null list counts as absent; neither key: undefined (collect nothing); Go's case-insensitive match", () => {
    expect(validAttachmentsOf({ "cni.dev/valid-attachments": null, "cni.dev/attachments": B })).toEqual([{ containerID: "b", ifName: "net1" }]);
    expect(validAttachmentsOf({})).toBeUndefined();
    expect(gcAttachmentList({ "cni.dev/valid-attachments": null })).toBeUndefined();
    expect(validAttachmentsOf({ "CNI.dev/Attachments": B })).toEqual([{ containerID: "b", ifName: "net1" }]);
  });

  test("a malformed list is undefined, never everything", () => {
    for (const bad of ["x", [null], [{ containerID: 5, ifname: "eth0" }], [{ containerID: "a" }], {}]) {
      expect(validAttachmentsOf({ "cni.dev/attachments": bad })).toBeUndefined();
    }
  });
});

describe("lenientForDel", () => {
  const refuse = (): string => {
    throw new Error("invalid value");
  };
  test("checks as usual unless loading for DEL, where the fallback stands in for a refusal", () => {
    expect(() => lenientForDel({}, "fallback", refuse)).toThrow("invalid value");
    expect(() => lenientForDel({ forDel: false }, "fallback", refuse)).toThrow("invalid value");
    expect(lenientForDel({ forDel: true }, "fallback", refuse)).toBe("fallback");
    expect(lenientForDel({ forDel: true }, "fallback", () => "checked")).toBe("checked");
  });
});
