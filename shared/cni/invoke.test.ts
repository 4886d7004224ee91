import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CniError } from "./errors.ts";
import { enableInProcessDelegation } from "./in-process.ts";
import { delegate, delegateAdd, execDelegate, findInPath, validatePluginName } from "./invoke.ts";
import type { CmdArgs, PluginSpec } from "./types.ts";
import { ALL_VERSIONS } from "./version.ts";
import { PROCESS_SCOPE } from "./call-scope.ts";

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

function cmdArgs(path: string, config: Record<string, unknown> = { cniVersion: "1.0.0", name: "n" }): CmdArgs {
  return {
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
  };
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
    const r = await delegateAdd("echoer", cmdArgs(dir));
    expect(r.ips).toEqual([{ address: "10.0.0.5/24" }]);
    expect(r.dns?.domain).toBe("ADD-me-cniVersion1.0.0namen");
  });
  test("re-emits a delegate's error JSON unchanged", async () => {
    script("failer", `printf '{"code": 7, "msg": "bad range", "details": "d"}'; exit 1`);
    const err = await asyncFailure(delegate("failer", cmdArgs(dir), "DEL"));
    expect([err.code, err.message, err.details]).toEqual([7, "bad range", "d"]);
  });
  test("synthesises code 0 from stderr when the delegate printed nothing", async () => {
    script("crasher", `echo oops >&2; exit 3`);
    const err = await asyncFailure(execDelegate("crasher", cmdArgs(dir), "ADD"));
    expect([err.code, err.message]).toEqual([0, 'netplugin failed: "oops\\n"']);
  });
  test("reports unparsable error output", async () => {
    script("garbler", `echo notjson; exit 1`);
    const err = await asyncFailure(execDelegate("garbler", cmdArgs(dir), "ADD"));
    expect(err.message).toStartWith('netplugin failed but error parsing its diagnostic message "notjson\\n"');
  });
  test("injects the config's version into a result without one", async () => {
    script("noversion", `printf '{"ip4":{"ip":"10.1.0.2/16"}}'`);
    const r = await delegateAdd("noversion", cmdArgs(dir, { cniVersion: "0.2.0", name: "n" }));
    expect(r.ips).toEqual([{ address: "10.1.0.2/16" }]);
  });
});

describe("in-process delegation", () => {
  test("runs a plugin of this executable in-process with identical inputs", async () => {
    // A hard link to the running executable has the same inode: the fast path applies.
    const inProcDir = join(dir, "self");
    mkdirSync(inProcDir, { recursive: true });
    linkSync(process.execPath, join(inProcDir, "fake-ipam"));
    const seen: CmdArgs[] = [];
    const spec: PluginSpec = {
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
    enableInProcessDelegation((name) => (name === "fake-ipam" ? spec : undefined), "test");
    const args = cmdArgs(inProcDir);
    const r = await delegateAdd("fake-ipam", args);
    expect(r.ips).toEqual([{ address: "10.9.0.2/24", gateway: "10.9.0.1" }]);
    expect(seen[0]!.command).toBe("ADD");
    expect(seen[0]!.config).toEqual(args.config);
    expect(seen[0]!.args).toBe("IgnoreUnknown=1");
    const err = await asyncFailure(delegate("fake-ipam", args, "DEL"));
    expect([err.code, err.message]).toEqual([11, "busy, try later"]);
    expect(seen[1]!.command).toBe("DEL");
  });
});
