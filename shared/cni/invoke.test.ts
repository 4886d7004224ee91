import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PROCESS_SCOPE } from "./call-scope.ts";
import { withDelegate } from "./delegate.ts";
import type { InProcessPlugins } from "./types.ts";
import { CniError } from "./errors.ts";
import { execDelegate, findInPath, validatePluginName } from "./invoke.ts";
import { runPlugin } from "./skel.ts";
import type { CmdArgs, PluginSpec } from "./types.ts";
import { ALL_VERSIONS } from "./version.ts";

// Under the repository (same filesystem as the bun executable, so a hard link can be made).
const base = resolve(import.meta.dir, "../../.test-out");
mkdirSync(base, { recursive: true });
const dir = mkdtempSync(join(base, "invoke-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, body: string): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
}

/** An ADD's CmdArgs with CNI_PATH `path`; its delegate runs `inProcess`'s plugins in-process when given. */
function cmdArgs(path: string, config: Record<string, unknown> = { cniVersion: "1.0.0", name: "n" }, inProcess?: InProcessPlugins): CmdArgs {
  return withDelegate(
    {
      command: "ADD",
      containerID: "c1",
      netns: "/var/run/netns/x",
      ifName: "eth0",
      args: "IgnoreUnknown=1",
      path,
      stdinData: new TextEncoder().encode(JSON.stringify(config)),
      config,
      cniVersion: String(config.cniVersion ?? "0.1.0"),
      env: { CNI_COMMAND: "ADD", CNI_CONTAINERID: "c1", CNI_NETNS: "/var/run/netns/x", CNI_IFNAME: "eth0", CNI_ARGS: "IgnoreUnknown=1", CNI_PATH: path, KEEP: "me" },
      stderr: () => {},
      scope: PROCESS_SCOPE,
    },
    inProcess,
  );
}

function failure(fn: () => unknown): CniError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return err;
    throw err;
  }
  throw new Error("expected an error");
}

async function asyncFailure(p: Promise<unknown>): Promise<CniError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof CniError) return err;
    throw err;
  }
  throw new Error("expected an error");
}

describe("validatePluginName", () => {
  test.each(["../../sbin/reboot", "a/b", "/bin/sh", ".", "..", "a\0b"])("rejects %p", (name) => {
    expect(failure(() => validatePluginName(name)).message).toStartWith("invalid plugin name");
  });
  test("rejects an empty name", () => {
    expect(failure(() => validatePluginName("")).message).toBe("no plugin name provided");
  });
});

describe("findInPath", () => {
  test("finds the first regular file and skips directories", () => {
    mkdirSync(join(dir, "d1", "ipam"), { recursive: true });
    mkdirSync(join(dir, "d2"), { recursive: true });
    writeFileSync(join(dir, "d2", "ipam"), "");
    expect(findInPath("ipam", `${join(dir, "d1")}::${join(dir, "d2")}`)).toBe(join(dir, "d2", "ipam"));
  });
  test("names the directories searched when missing", () => {
    expect(failure(() => findInPath("nope", `${dir}:/nonexistent`)).message).toBe(
      `failed to find plugin "nope" in path [${dir} /nonexistent]`,
    );
  });
  test("refuses an empty CNI_PATH with code 4", () => {
    expect(failure(() => findInPath("x", "")).code).toBe(4);
  });
});

describe("external delegation", () => {
  test("passes the full config on stdin and the env with CNI_COMMAND overridden", async () => {
    script("echoer", `printf '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.5/24"}],"dns":{"domain":"%s-%s-%s"}}' "$CNI_COMMAND" "$KEEP" "$(cat | tr -d '{}":,' )"`);
    const r = await cmdArgs(dir).delegate.add("echoer");
    expect(r.ips).toEqual([{ address: "10.0.0.5/24" }]);
    expect(r.dns?.domain).toBe("ADD-me-cniVersion1.0.0namen");
  });
  test("re-emits a delegate's error JSON unchanged", async () => {
    script("failer", `printf '{"code": 7, "msg": "bad range", "details": "d"}'; exit 1`);
    const err = await asyncFailure(cmdArgs(dir).delegate.run("failer", "DEL"));
    expect([err.code, err.message, err.details]).toEqual([7, "bad range", "d"]);
  });
  test("synthesises code 0 from stderr when the delegate printed nothing", async () => {
    script("crasher", `echo oops >&2; exit 3`);
    const err = await asyncFailure(cmdArgs(dir).delegate.add("crasher"));
    expect([err.code, err.message]).toEqual([0, 'netplugin failed: "oops\\n"']);
  });
  test("reports unparsable error output", async () => {
    script("garbler", `echo notjson; exit 1`);
    const err = await asyncFailure(cmdArgs(dir).delegate.add("garbler"));
    expect(err.message).toStartWith('netplugin failed but error parsing its diagnostic message "notjson\\n"');
  });
  test("injects the config's version into a result without one", async () => {
    script("noversion", `printf '{"ip4":{"ip":"10.1.0.2/16"}}'`);
    const r = await cmdArgs(dir, { cniVersion: "0.2.0", name: "n" }).delegate.add("noversion");
    expect(r.ips).toEqual([{ address: "10.1.0.2/16" }]);
  });
});

describe("in-process delegation", () => {
  // Hard links to the running executable have its inode: they are "this build".
  const selfDir = join(dir, "self");
  mkdirSync(selfDir, { recursive: true });
  for (const name of ["fake-ipam", "outer", "inner"]) linkSync(process.execPath, join(selfDir, name));

  /** This build's plugins for the tests: `fake-ipam` records its calls, DEL fails with code 11. */
  function plugins(seen: CmdArgs[], extra: Record<string, PluginSpec> = {}): InProcessPlugins {
    const fakeIpam: PluginSpec = {
      name: "fake-ipam",
      versions: ALL_VERSIONS,
      add: (a) => {
        seen.push(a);
        return { ips: [{ address: "10.9.0.2/24", gateway: "10.9.0.1" }] };
      },
      del: (a) => {
        seen.push(a);
        throw new CniError(11, "busy, try later");
      },
    };
    const specs: Record<string, PluginSpec> = { "fake-ipam": fakeIpam, ...extra };
    const lookup = (name: string) => specs[name];
    return { lookup, run: (spec, io) => runPlugin(spec, io, { buildVersion: "test", plugins: lookup, delegated: true }) };
  }

  test("runs a plugin of this build in-process with identical inputs", async () => {
    const seen: CmdArgs[] = [];
    const args = cmdArgs(selfDir, undefined, plugins(seen));
    const r = await args.delegate.add("fake-ipam");
    expect(r.ips).toEqual([{ address: "10.9.0.2/24", gateway: "10.9.0.1" }]);
    expect(seen[0]!.command).toBe("ADD");
    expect(seen[0]!.config).toEqual(args.config);
    expect(seen[0]!.args).toBe("IgnoreUnknown=1");
    expect(seen[0]!.env.KEEP).toBe("me");
    const err = await asyncFailure(args.delegate.run("fake-ipam", "DEL"));
    expect([err.code, err.message]).toEqual([11, "busy, try later"]);
    expect(seen[1]!.command).toBe("DEL");
  });

  test("a delegate running in-process delegates in-process too", async () => {
    const seen: CmdArgs[] = [];
    const record = (name: string): PluginSpec => ({
      name,
      versions: ALL_VERSIONS,
      add: async (a) => {
        seen.push(a);
        return name === "outer" ? a.delegate.add("inner") : { ips: [{ address: "10.9.0.3/24" }] };
      },
      del: () => {},
    });
    const r = await cmdArgs(selfDir, undefined, plugins(seen, { outer: record("outer"), inner: record("inner") })).delegate.add("outer");
    expect(r.ips).toEqual([{ address: "10.9.0.3/24" }]);
    expect(seen.map((a) => a.command)).toEqual(["ADD", "ADD"]);
  });

  test("a file in CNI_PATH that is not this build is executed, even for a type this build has", async () => {
    const otherDir = join(dir, "other");
    mkdirSync(otherDir, { recursive: true });
    writeFileSync(join(otherDir, "fake-ipam"), `#!/bin/sh\nprintf '{"cniVersion":"1.0.0","ips":[{"address":"10.7.0.9/24"}]}'\n`);
    chmodSync(join(otherDir, "fake-ipam"), 0o755);
    const seen: CmdArgs[] = [];
    const r = await cmdArgs(otherDir, undefined, plugins(seen)).delegate.add("fake-ipam");
    expect(r.ips).toEqual([{ address: "10.7.0.9/24" }]);
    expect(seen).toEqual([]);
  });

  test("without this build's plugins, even this build's file is executed", async () => {
    // The file is the bun executable, which, executed with no arguments, prints its usage and exits 0.
    const stdout = await execDelegate("fake-ipam", cmdArgs(selfDir), "DEL");
    expect(stdout).toContain("Usage: bun");
  });
});
