import { afterAll, describe, expect, test } from "bun:test";
import { linkSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { InvalidConfigError } from "./errors.ts";
import { runPlugin, type RunOptions } from "./skel.ts";
import type { PluginIO } from "./types.ts";
import type { CmdArgs, PluginSpec, Result } from "./types.ts";
import { ALL_VERSIONS } from "./version.ts";

interface Run {
  status: number;
  stdout: string;
  stderr: string;
  calls: string[];
}

function fakeSpec(calls: string[], overrides: Partial<PluginSpec> = {}): PluginSpec {
  const result: Result = { ips: [{ address: "10.0.0.2/24", gateway: "10.0.0.1" }] };
  return {
    name: "fake",
    versions: ALL_VERSIONS,
    add: (a: CmdArgs) => {
      calls.push(`ADD ${a.cniVersion}`);
      return result;
    },
    del: () => {
      calls.push("DEL");
    },
    check: () => {
      calls.push("CHECK");
    },
    status: () => {
      calls.push("STATUS");
    },
    gc: () => {
      calls.push("GC");
    },
    ...overrides,
  };
}

const baseEnv = {
  CNI_CONTAINERID: "c1",
  CNI_NETNS: "/nonexistent/netns",
  CNI_IFNAME: "eth0",
  CNI_PATH: "/opt/cni/bin",
};

async function run(
  env: Record<string, string>,
  stdin: string,
  spec?: (calls: string[]) => PluginSpec,
  opts: RunOptions = { buildVersion: "v9.9.9" },
): Promise<Run> {
  const calls: string[] = [];
  let stdout = "";
  let stderr = "";
  const io: PluginIO = {
    env,
    readStdin: () => new TextEncoder().encode(stdin),
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
  };
  const status = await runPlugin(spec ? spec(calls) : fakeSpec(calls), io, opts);
  return { status, stdout, stderr, calls };
}

const conf = (v?: string) => JSON.stringify(v === undefined ? { name: "net" } : { cniVersion: v, name: "net" });

describe("skel", () => {
  test("prints the about text on stderr and exits 0 without CNI_COMMAND", async () => {
    const r = await run({}, "");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "CNI fake plugin v9.9.9\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n",
    );
  });

  test("answers VERSION without reading stdin", async () => {
    const r = await run({ CNI_COMMAND: "VERSION" }, "not json");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}\n',
    );
  });

  test("prints a converted result for ADD", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf("0.4.0"));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      cniVersion: "0.4.0",
      ips: [{ version: "4", address: "10.0.0.2/24", gateway: "10.0.0.1" }],
      dns: {},
    });
    expect(r.stdout.endsWith("\n")).toBe(false);
  });

  test("treats a missing cniVersion as 0.1.0", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf());
    expect(r.calls).toEqual(["ADD 0.1.0"]);
    expect(JSON.parse(r.stdout)).toEqual({ cniVersion: "0.1.0", ip4: { ip: "10.0.0.2/24", gateway: "10.0.0.1" }, dns: {} });
  });

  test("formats errors as 4-space JSON with cniVersion, code, msg and details, exit 1", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf("9.9.9"));
    expect(r.status).toBe(1);
    expect(r.stdout).toBe(
      '{\n    "cniVersion": "1.1.0",\n    "code": 1,\n    "msg": "incompatible CNI versions",\n    "details": "config is \\"9.9.9\\", plugin supports [\\"0.1.0\\" \\"0.2.0\\" \\"0.3.0\\" \\"0.3.1\\" \\"0.4.0\\" \\"1.0.0\\" \\"1.1.0\\"]"\n}',
    );
    expect(r.calls).toEqual([]);
  });

  test.each([
    ["", 6, "error unmarshall network config: unexpected end of JSON input"],
    ["{", 6, undefined],
    ["[]", 6, "error unmarshall network config: json: cannot unmarshal array into Go value of type types.NetConf"],
    ["null", 7, "missing network name"],
    ['{"name":""}', 7, "missing network name"],
    ['{"name":5}', 6, undefined],
    ['{"name":"a/b"}', 7, "invalid characters found in network name"],
    ['{"name":"n"} x', 6, undefined],
    ["[".repeat(10001) + "]".repeat(10001), 6, "error unmarshall network config: exceeded max depth"],
    [`{"name":"n","x":"${"[".repeat(20000)}"}`, -1, undefined],
  ])("rejects stdin %p with code %d", async (stdin, code, msg) => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, stdin);
    if (code === -1) {
      expect(r.status).toBe(0); // brackets inside a string do not count as nesting
      return;
    }
    expect(r.status).toBe(1);
    const err = JSON.parse(r.stdout);
    expect(err.code).toBe(code);
    if (msg) expect(err.msg).toBe(msg);
    expect(r.calls).toEqual([]);
  });

  test("rejects an unknown command with code 4 after reading the config", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "BOGUS" }, conf("1.0.0"));
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 4, msg: "unknown CNI_COMMAND: BOGUS" });
  });

  test.each([
    ["CHECK", "0.3.1", 1, "config version does not allow CHECK"],
    ["CHECK", "abc", 6, undefined],
    ["STATUS", "1.0.0", 1, "config version does not allow STATUS"],
    ["GC", "1.0.0", 1, "config version does not allow GC"],
  ])("gates %s at cniVersion %s", async (command, version, code, msg) => {
    const r = await run({ ...baseEnv, CNI_COMMAND: command }, conf(version));
    const err = JSON.parse(r.stdout);
    expect(err.code).toBe(code);
    if (msg) expect(err.msg).toBe(msg);
    expect(r.calls).toEqual([]);
  });

  test("reports a plugin that cannot do CHECK at the config's version", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "CHECK" }, conf("1.1.0"), (calls) => ({
      ...fakeSpec(calls),
      versions: ["0.3.0", "0.4.0", "1.0.0"],
    }));
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 1, msg: "plugin version does not allow CHECK" });
  });

  test.each(["CHECK", "STATUS", "GC", "DEL"])("calls the %s handler and prints nothing", async (command) => {
    const r = await run({ ...baseEnv, CNI_COMMAND: command }, conf("1.1.0"));
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.calls).toEqual([command]);
  });

  test("treats a missing STATUS handler as success", async () => {
    const r = await run({ CNI_COMMAND: "STATUS", CNI_PATH: "/x" }, conf("1.1.0"), (calls) => {
      const { status: _s, ...rest } = fakeSpec(calls);
      return rest;
    });
    expect(r.status).toBe(0);
  });

  test("refuses the plugin's own netns with code 8 before running ADD", async () => {
    const r = await run({ ...baseEnv, CNI_COMMAND: "ADD", CNI_NETNS: "/proc/self/ns/net" }, conf("1.0.0"));
    expect(JSON.parse(r.stdout)).toEqual({
      cniVersion: "1.0.0",
      code: 8,
      msg: "plugin's netns and netns from CNI_NETNS should not be the same",
    });
    expect(r.calls).toEqual([]);
  });

  test("allows the own netns with CNI_NETNS_OVERRIDE", async () => {
    const r = await run(
      { ...baseEnv, CNI_COMMAND: "DEL", CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "true" },
      conf("1.0.0"),
    );
    expect(r.status).toBe(0);
    expect(r.calls).toEqual(["DEL"]);
  });

  test("maps a thrown CniError to its code and other errors to 999", async () => {
    const failing = (err: Error) => (calls: string[]) => ({
      ...fakeSpec(calls),
      add: () => {
        throw err;
      },
    });
    const a = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf("1.0.0"), failing(new InvalidConfigError("bad mtu")));
    expect(JSON.parse(a.stdout)).toEqual({ cniVersion: "1.0.0", code: 7, msg: "bad mtu" });
    const b = await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf("1.0.0"), failing(new Error("boom <&>")));
    expect(b.stdout).toBe('{\n    "cniVersion": "1.0.0",\n    "code": 999,\n    "msg": "boom \\u003c\\u0026\\u003e"\n}');
  });

  test("an error carries the request's cniVersion when supported, else the newest supported one", async () => {
    const versionOf = async (env: Record<string, string>, stdin: string) => JSON.parse((await run(env, stdin)).stdout).cniVersion;
    expect(await versionOf({ ...baseEnv, CNI_COMMAND: "BOGUS" }, conf("0.3.1"))).toBe("0.3.1");
    expect(await versionOf({ ...baseEnv, CNI_COMMAND: "BOGUS" }, conf())).toBe("0.1.0");
    expect(await versionOf({ ...baseEnv, CNI_COMMAND: "ADD" }, "{not json")).toBe("1.1.0");
    expect(await versionOf({ CNI_COMMAND: "ADD" }, conf("0.4.0"))).toBe("1.1.0"); // env refused before stdin is read
    const older = (calls: string[]) => ({ ...fakeSpec(calls), versions: ["0.3.1", "0.4.0"] });
    expect(JSON.parse((await run({ ...baseEnv, CNI_COMMAND: "ADD" }, conf("1.0.0"), older)).stdout).cniVersion).toBe("0.4.0");
  });
});

describe("skel: the handler's delegate (CmdArgs.delegate)", () => {
  // Under the repository (same filesystem as the bun executable): a hard link to the running
  // executable has its inode, so it is "this build" for delegation.
  const base = resolve(import.meta.dir, "../../.test-out");
  mkdirSync(base, { recursive: true });
  const bin = mkdtempSync(join(base, "skel-"));
  afterAll(() => rmSync(bin, { recursive: true, force: true }));
  linkSync(process.execPath, join(bin, "fake-ipam"));

  const ipam: PluginSpec = { name: "fake-ipam", versions: ALL_VERSIONS, add: () => ({ ips: [{ address: "10.9.0.2/24" }] }), del: () => {} };
  const delegating = (calls: string[]): PluginSpec => ({
    ...fakeSpec(calls),
    add: (a) => a.delegate.add("fake-ipam"),
  });
  const env = { ...baseEnv, CNI_COMMAND: "ADD", CNI_PATH: bin };

  test("runs this build's plugins, given to runPlugin, in-process", async () => {
    const r = await run(env, conf("1.0.0"), delegating, { plugins: (name) => (name === "fake-ipam" ? ipam : undefined) });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.9.0.2/24" }], dns: {} });
  });

  test("without them, executes the file CNI_PATH finds", async () => {
    // Here the bun executable, which prints its usage: not a result.
    const r = await run(env, conf("1.0.0"), delegating);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).msg).toContain("Bun is a fast JavaScript runtime");
  });
});
