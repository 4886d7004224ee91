import { describe, expect, test } from "bun:test";
import { readCniEnv, validateContainerID, validateInterfaceName } from "./env.ts";
import { CniError } from "./errors.ts";

function codeOf(fn: () => unknown): [number, string, string | undefined] {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return [err.code, err.message, err.details];
    throw err;
  }
  throw new Error("expected an error");
}

const full = {
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "c1",
  CNI_NETNS: "/proc/1/ns/net",
  CNI_IFNAME: "eth0",
  CNI_PATH: "/opt/cni/bin",
};

describe("readCniEnv", () => {
  test("accepts a complete ADD environment", () => {
    expect(readCniEnv(full)).toMatchObject({ command: "ADD", containerID: "c1", ifName: "eth0", args: "" });
  });

  test.each([
    ["ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"]],
    ["CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"]],
    ["DEL", ["CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"]],
    ["GC", ["CNI_PATH"]],
    ["STATUS", ["CNI_PATH"]],
    ["VERSION", []],
  ])("lists the variables %s requires in upstream order", (command, required) => {
    if (required.length === 0) {
      expect(readCniEnv({ CNI_COMMAND: command }).command).toBe(command);
      return;
    }
    expect(codeOf(() => readCniEnv({ CNI_COMMAND: command }))).toEqual([
      4,
      `required env variables [${required.join(",")}] missing`,
      undefined,
    ]);
  });

  test("treats an empty variable as missing", () => {
    expect(codeOf(() => readCniEnv({ ...full, CNI_PATH: "" }))[1]).toBe("required env variables [CNI_PATH] missing");
  });

  test("reports a missing CNI_COMMAND", () => {
    expect(codeOf(() => readCniEnv({}))).toEqual([4, "required env variables [CNI_COMMAND] missing", undefined]);
  });

  test("validates a present container ID before reporting later missing variables", () => {
    expect(codeOf(() => readCniEnv({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "../x" }))).toEqual([
      4,
      "invalid characters in containerID",
      "../x",
    ]);
  });

  test("does not require a netns for DEL", () => {
    expect(readCniEnv({ ...full, CNI_COMMAND: "DEL", CNI_NETNS: "" }).netns).toBe("");
  });

  test("does not validate CNI_IFNAME for GC", () => {
    expect(readCniEnv({ CNI_COMMAND: "GC", CNI_PATH: "/x", CNI_IFNAME: "a/b" }).command).toBe("GC");
  });
});

describe("validateContainerID", () => {
  test.each(["c1", "A.b_c-9", "x".repeat(1000)])("accepts %s", (id) => {
    expect(() => validateContainerID(id)).not.toThrow();
  });
  test("rejects an empty ID with code 3", () => {
    expect(codeOf(() => validateContainerID(""))).toEqual([3, "missing containerID", undefined]);
  });
  test.each(["../x", "/x", "-x", ".x", "a b", "a\nb", "ü"])("rejects %p with code 4", (id) => {
    expect(codeOf(() => validateContainerID(id))[0]).toBe(4);
  });
});

describe("validateInterfaceName", () => {
  test.each(["eth0", "a".repeat(15), "ethü0", "-eth0"])("accepts %p", (name) => {
    expect(() => validateInterfaceName(name)).not.toThrow();
  });
  test.each([
    ["", "interface name is empty"],
    ["a".repeat(16), "interface name is too long"],
    ["ethüüüüüüüüüüü", "interface name is too long"],
    [".", "interface name is . or .."],
    ["..", "interface name is . or .."],
    ["a/b", "interface name contains / or : or whitespace characters"],
    ["a:b", "interface name contains / or : or whitespace characters"],
    ["a b", "interface name contains / or : or whitespace characters"],
    ["a\tb", "interface name contains / or : or whitespace characters"],
    ["a\u00a0b", "interface name contains / or : or whitespace characters"],
    // Upstream accepts these; the kernel would not create them as given.
    ["eth%d", "interface name contains %, which the kernel replaces with a number"],
    ["%", "interface name contains %, which the kernel replaces with a number"],
    ["a%s", "interface name contains %, which the kernel replaces with a number"],
    ["all", 'interface name "all" is reserved by the kernel'],
    ["default", 'interface name "default" is reserved by the kernel'],
  ])("rejects %p", (name, msg) => {
    const [code, message] = codeOf(() => validateInterfaceName(name));
    expect(code).toBe(4);
    expect(message).toBe(msg);
  });
  test.each(["All", "alls", "defaults", "eth-d"])("accepts %p (the kernel creates it as given)", (name) => {
    expect(() => validateInterfaceName(name)).not.toThrow();
  });
});
