/**
 * A battery of bad-input and misuse probes for loopback, host-local and static. The ids (P01, P02,
 * ...) only number the probes; each states what it checks in its title.
 *
 * Every failing probe asserts: exit status 1, the exact CNI error code, a message naming the field
 * or value at fault, and that nothing was left behind (container links, host links and host-local
 * reservation files are unchanged). Where the Go reference is installed (/usr/lib/cni, Debian
 * 1.1.1), the same probe runs against it on fresh fixtures; its answer is recorded in `go` and
 * asserted too, and ours must give the same code or a more precise one. Deliberate differences are
 * stated in `why`:
 * - Go answers 999 for nearly every plugin-level failure; we give the precise code (7 for a bad
 *   config value, 8 for a bad netns, 4 for bad CNI_ARGS) — "more precise".
 * - CNI_NETNS naming the plugin's own netns: Go 1.1.1 does the work and succeeds (HEAD does the work,
 *   then fails with 8); we refuse with code 8 before doing anything.
 * - GC/STATUS and cniVersion 1.1.0: Go 1.1.1 predates spec 1.1.0.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { hostLocalConfig, staticConfig } from "../harness/configs.ts";
import { execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { findLink, isUp, listLinks } from "../harness/ip-oracle.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { readStoreDir } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

type Plugin = "loopback" | "host-local" | "static";
const PLUGINS: Plugin[] = ["loopback", "host-local", "static"];
const NET = "probe-net";

interface Ctx {
  ns: ContainerNetns;
  dataDir: string;
  /** A scratch dir for files the probe needs (not the store). */
  scratch: string;
}

function baseConfig(plugin: Plugin, ctx: Ctx, cniVersion: string | undefined = "1.0.0"): Record<string, unknown> {
  switch (plugin) {
    case "loopback":
      return cniVersion === undefined ? { name: NET, type: "loopback" } : { name: NET, type: "loopback", cniVersion };
    case "host-local":
      return hostLocalConfig({ name: NET, cniVersion, dataDir: ctx.dataDir });
    case "static":
      return staticConfig({ name: NET, cniVersion, addresses: [{ address: "10.10.0.1/24" }] });
  }
}

function baseInv(plugin: Plugin, ctx: Ctx, command = "ADD"): PluginInvocation {
  return { command, containerID: "probe-ctr", netns: ctx.ns.path, ifName: "eth0", config: baseConfig(plugin, ctx) };
}

interface Probe {
  id: string;
  plugin: Plugin;
  /** "<does what> when <...>", after "<plugin> ". */
  title: string;
  inv: (ctx: Ctx) => PluginInvocation;
  setup?: (ctx: Ctx) => void | Promise<void>;
  code: number;
  msg?: string | RegExp;
  details?: string | RegExp;
  /** Go 1.1.1's answer: an error code, "success", or null when it cannot be run meaningfully. */
  go: number | "success" | null;
  /** Why ours differs from Go beyond "more precise than 999". */
  why?: string;
}

interface Snapshot {
  container: string;
  host: string;
  store: string;
}

function snapshot(ctx: Ctx): Snapshot {
  const links = (path: string | undefined) =>
    JSON.stringify(
      (() => {
        try {
          return listLinks(path).map((l) => ({ name: l.ifname, flags: [...l.flags].sort() }));
        } catch {
          return "netns gone";
        }
      })(),
    );
  const store = readStoreDir(ctx.dataDir).filter((f) => !f.name.endsWith("/lock") && !/last_reserved_ip\.\d+$/.test(f.name));
  return { container: links(ctx.ns.path), host: links(undefined), store: JSON.stringify(store) };
}

async function freshCtx(): Promise<Ctx> {
  return { ns: await createContainerNetns(), dataDir: makeTempDir("cni-probe-store-"), scratch: makeTempDir("cni-probe-") };
}

async function runProbe(p: Probe, binDir?: string): Promise<{ run: PluginRun; before: Snapshot; after: Snapshot }> {
  const ctx = await freshCtx();
  await p.setup?.(ctx);
  const before = snapshot(ctx);
  const run = await execPlugin(p.plugin, { ...p.inv(ctx), ...(binDir ? { binDir } : {}) });
  return { run, before, after: snapshot(ctx) };
}

function defineProbe(p: Probe): void {
  test(`${p.plugin} ${p.title} (${p.id})`, async () => {
    const { run, before, after } = await runProbe(p);
    const err = expectCniError(run, { code: p.code, ...(p.msg ? { msg: p.msg } : {}), ...(p.details ? { details: p.details } : {}) });
    expect(after).toEqual(before);
    if (p.go === null || !hasGoPlugin(p.plugin)) return;
    const go = await runProbe(p, GO_BIN_DIR);
    if (p.go === "success") {
      expect({ goStatus: go.run.status, why: typeof p.why }).toEqual({ goStatus: 0, why: "string" });
      return;
    }
    expect({ goStatus: go.run.status, goCode: go.run.json?.code }).toEqual({ goStatus: 1, goCode: p.go });
    const samOrBetter = err.code === p.go || p.go === 999 || p.why !== undefined;
    expect({ ours: err.code, go: p.go, samOrBetter }).toEqual({ ours: err.code, go: p.go, samOrBetter: true });
  });
}

const withConfig =
  (plugin: Plugin, edit: (conf: Record<string, unknown>, ctx: Ctx) => unknown, command = "ADD") =>
  (ctx: Ctx): PluginInvocation => ({ ...baseInv(plugin, ctx, command), config: edit(baseConfig(plugin, ctx), ctx) });

const withInv =
  (plugin: Plugin, edit: Partial<PluginInvocation> | ((ctx: Ctx) => Partial<PluginInvocation>), command = "ADD") =>
  (ctx: Ctx): PluginInvocation => ({ ...baseInv(plugin, ctx, command), ...(typeof edit === "function" ? edit(ctx) : edit) });

describe.skipIf(!sandboxed())("probes", () => {
  useFixtureCleanup();

  for (const plugin of PLUGINS) {
    describe(plugin, () => {
      // P01 — unknown command.
      defineProbe({
        id: "P01",
        plugin,
        title: "answers code 4 when CNI_COMMAND is unknown",
        inv: withInv(plugin, { command: "BOGUS" }),
        code: 4,
        msg: "unknown CNI_COMMAND: BOGUS",
        go: 4,
      });

      // P02 — malformed stdin.
      const stdinCases: [string, string, number, string | RegExp, number][] = [
        ["stdin is truncated JSON", '{"name":"probe-net","cniVersion":', 6, "error unmarshall network config", 6],
        ["stdin is empty", "", 6, "error unmarshall network config", 6],
        ["stdin is a JSON array", "[]", 6, "error unmarshall network config", 6],
        ["stdin has trailing garbage", '{"name":"probe-net","cniVersion":"1.0.0"} x', 6, "error unmarshall network config", 6],
        ["the network name is not a string", '{"name":5,"cniVersion":"1.0.0"}', 6, /NetConf\.name/, 6],
        ["stdin is null", "null", 7, "missing network name", 7],
        ["stdin nests 200000 levels deep", `{"name":"n","x":${"[".repeat(200000)}${"]".repeat(200000)}}`, 6, "error unmarshall network config", 6],
      ];
      for (const [when, stdin, code, msg, go] of stdinCases) {
        defineProbe({ id: "P02", plugin, title: `answers code ${code} when ${when}`, inv: withInv(plugin, { config: stdin }), code, msg, go });
      }
      defineProbe({
        id: "P02",
        plugin,
        title: "answers code 7 when the network name is not valid UTF-8",
        inv: withInv(plugin, { config: Buffer.concat([Buffer.from('{"cniVersion":"1.0.0","name":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]) }),
        code: 7,
        msg: "invalid characters found in network name",
        go: 7,
      });

      // P03 — missing environment variables.
      for (const [field, key] of [
        ["CNI_CONTAINERID", "containerID"],
        ["CNI_NETNS", "netns"],
        ["CNI_IFNAME", "ifName"],
        ["CNI_PATH", "path"],
      ] as const) {
        defineProbe({
          id: "P03",
          plugin,
          title: `ADD answers code 4 naming ${field} when it is missing`,
          inv: withInv(plugin, { [key]: key === "path" ? "" : undefined }),
          code: 4,
          msg: `required env variables [${field}] missing`,
          go: 4,
        });
      }
      defineProbe({
        id: "P03",
        plugin,
        title: "DEL answers code 4 listing every missing variable in upstream order",
        inv: withInv(plugin, { containerID: undefined, ifName: undefined, path: "" }, "DEL"),
        code: 4,
        msg: "required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing",
        go: 4,
      });

      // P04 — interface names.
      for (const [when, ifName, msg] of [
        ["16 bytes long", "eth0123456789abc", "interface name is too long"],
        ["15 bytes but 14 characters (multi-byte)", "ethü0123456789a", "interface name is too long"],
        ['"."', ".", "interface name is . or .."],
        ['".."', "..", "interface name is . or .."],
        ["contains /", "eth/0", "interface name contains / or : or whitespace characters"],
        ["contains :", "eth:0", "interface name contains / or : or whitespace characters"],
        ["contains a space", "eth 0", "interface name contains / or : or whitespace characters"],
        ["contains a tab", "eth\t0", "interface name contains / or : or whitespace characters"],
      ] as const) {
        for (const command of ["ADD", "DEL"]) {
          defineProbe({
            id: "P04",
            plugin,
            title: `${command} answers code 4 when the interface name is ${when}`,
            inv: withInv(plugin, { ifName }, command),
            code: 4,
            msg,
            go: 4,
          });
        }
      }

      // P05 — container IDs.
      for (const [when, id] of [
        ["contains ../", "../etc"],
        ["starts with /", "/abs"],
        ["starts with -", "-ctr"],
        ["starts with .", ".ctr"],
        ["contains a space", "ctr 1"],
        ["contains a newline", "ctr\n1"],
        ["is not ASCII", "ctrü"],
      ] as const) {
        for (const command of ["ADD", "DEL"]) {
          defineProbe({
            id: "P05",
            plugin,
            title: `${command} answers code 4 naming the container ID when it ${when}`,
            inv: withInv(plugin, { containerID: id }, command),
            code: 4,
            msg: "invalid characters in containerID",
            details: id,
            go: 4,
          });
        }
      }

      // P06 — network names.
      for (const [when, name, msg] of [
        ["contains /", "a/b", "invalid characters found in network name"],
        ["is ../x", "../x", "invalid characters found in network name"],
        ['is "."', ".", "invalid characters found in network name"],
        ['is ".."', "..", "invalid characters found in network name"],
        ["contains a space", "a b", "invalid characters found in network name"],
        ["is empty", "", "missing network name"],
      ] as const) {
        defineProbe({
          id: "P06",
          plugin,
          title: `answers code 7 when the network name ${when}`,
          inv: withConfig(plugin, (c) => ({ ...c, name })),
          code: 7,
          msg,
          go: 7,
        });
      }

      // P07 — bad netns (interface plugins open it; the own-netns guard applies to every plugin).
      defineProbe({
        id: "P07",
        plugin,
        title: "ADD answers code 8 before any work when CNI_NETNS is the plugin's own netns",
        inv: withInv(plugin, { netns: `/proc/${process.pid}/ns/net` }),
        code: 8,
        msg: "plugin's netns and netns from CNI_NETNS should not be the same",
        go: "success",
        why: "Go 1.1.1 has no own-netns check and does the work; we refuse before touching anything",
      });
      defineProbe({
        id: "P07",
        plugin,
        title: "DEL answers code 8 before any work when CNI_NETNS is the plugin's own netns",
        inv: withInv(plugin, { netns: `/proc/${process.pid}/ns/net` }, "DEL"),
        code: 8,
        msg: "plugin's netns and netns from CNI_NETNS should not be the same",
        // Go loopback would set this (throwaway) host's lo DOWN: not run.
        go: null,
      });
      defineProbe({
        id: "P07",
        plugin,
        title: "ADD still answers code 8 for its own netns when CNI_NETNS_OVERRIDE=0",
        inv: withInv(plugin, { netns: `/proc/${process.pid}/ns/net`, env: { CNI_NETNS_OVERRIDE: "0" } }),
        code: 8,
        msg: "should not be the same",
        go: null,
      });
    });
  }

  describe("loopback netns", () => {
    for (const [when, make] of [
      ["a regular file", (ctx: Ctx) => { const p = join(ctx.scratch, "file"); writeFileSync(p, ""); return p; }],
      ["a directory", (ctx: Ctx) => { const p = join(ctx.scratch, "dir"); mkdirSync(p); return p; }],
      ["a relative path", () => "relative/netns/path"],
      ["a missing path", (ctx: Ctx) => join(ctx.scratch, "gone")],
    ] as const) {
      defineProbe({
        id: "P07",
        plugin: "loopback",
        title: `ADD answers code 8 naming the path when CNI_NETNS is ${when}`,
        inv: (ctx) => {
          const netns = make(ctx);
          return { ...baseInv("loopback", ctx), netns };
        },
        code: 8,
        msg: /netns/,
        go: 999,
      });
    }
    for (const [when, make] of [
      ["a regular file", (ctx: Ctx) => { const p = join(ctx.scratch, "file"); writeFileSync(p, ""); return p; }],
      ["a directory", (ctx: Ctx) => { const p = join(ctx.scratch, "dir"); mkdirSync(p); return p; }],
    ] as const) {
      defineProbe({
        id: "P07",
        plugin: "loopback",
        title: `DEL answers code 8 when CNI_NETNS is ${when}`,
        inv: (ctx) => ({ ...baseInv("loopback", ctx, "DEL"), netns: make(ctx) }),
        code: 8,
        msg: /unknown FS magic/,
        go: 999,
      });
    }

    test("loopback DEL leaves this host's lo UP when CNI_NETNS is the plugin's own netns (P07)", async () => {
      expect(isUp(findLink(undefined, "lo"))).toBe(true);
      const ctx = await freshCtx();
      const run = await execPlugin("loopback", { ...baseInv("loopback", ctx, "DEL"), netns: `/proc/${process.pid}/ns/net` });
      expectCniError(run, { code: 8 });
      expect(isUp(findLink(undefined, "lo"))).toBe(true);
    });

    test("loopback ADD works on its own netns when CNI_NETNS_OVERRIDE=1 (P07)", async () => {
      const ctx = await freshCtx();
      const run = await execPlugin("loopback", {
        ...baseInv("loopback", ctx),
        netns: `/proc/${process.pid}/ns/net`,
        env: { CNI_NETNS_OVERRIDE: "1" },
      });
      expectResult(run);
    });
  });

  // P08 — version matrix (shapes are in <plugin>.test.ts).
  for (const plugin of PLUGINS) {
    for (const v of ["9.9.9", "1.0", "abc", "0.5.0"]) {
      defineProbe({
        id: "P08",
        plugin,
        title: `ADD answers code 1 naming the version when cniVersion is "${v}"`,
        inv: withConfig(plugin, (c) => ({ ...c, cniVersion: v })),
        code: 1,
        msg: "incompatible CNI versions",
        details: `config is "${v}"`,
        go: 1,
      });
    }
    defineProbe({
      id: "P08",
      plugin,
      title: "CHECK answers code 1 when cniVersion is 0.3.1",
      inv: withConfig(plugin, (c) => ({ ...c, cniVersion: "0.3.1" }), "CHECK"),
      code: 1,
      msg: "config version does not allow CHECK",
      go: 1,
    });
    defineProbe({
      id: "P08",
      plugin,
      title: 'CHECK answers code 6 when cniVersion is "abc"',
      inv: withConfig(plugin, (c) => ({ ...c, cniVersion: "abc" }), "CHECK"),
      code: 6,
      msg: /abc/,
      go: 6,
    });
    defineProbe({
      id: "P08",
      plugin,
      title: "answers code 6 naming cniVersion when it is a number",
      inv: withConfig(plugin, (c) => ({ ...c, cniVersion: 1 })),
      code: 6,
      msg: /cniVersion/,
      go: 6,
    });
    test(`${plugin} ADD accepts cniVersion 1.1.0, which Go 1.1.1 refuses (P08)`, async () => {
      const ctx = await freshCtx();
      expectResult(await execPlugin(plugin, { ...baseInv(plugin, ctx), config: baseConfig(plugin, ctx, "1.1.0") }));
    });
  }

  // P09 — odd subnets (host-local).
  for (const [when, range, msg] of [
    ["a /31 subnet has host bits set", { subnet: "10.1.2.3/31" }, "Network has host bits set"],
    ["the subnet has host bits set", { subnet: "10.1.2.5/24" }, "Network has host bits set"],
    ["rangeStart is outside the subnet", { subnet: "10.1.2.0/24", rangeStart: "10.1.3.1" }, "RangeStart 10.1.3.1 not in network 10.1.2.0/24"],
    ["rangeEnd is outside the subnet", { subnet: "10.1.2.0/24", rangeEnd: "10.1.3.1" }, "RangeEnd 10.1.3.1 not in network 10.1.2.0/24"],
    ["the subnet is not a CIDR", { subnet: "10.1.2.0" }, /10\.1\.2\.0/],
  ] as const) {
    defineProbe({
      id: "P09",
      plugin: "host-local",
      title: `ADD answers code 7 naming the range when ${when}`,
      inv: withConfig("host-local", (c) => ({ ...c, ipam: { ...(c.ipam as object), ranges: [[range]] } })),
      code: 7,
      msg,
      go: 999,
    });
  }
  for (const [when, exclude, msg] of [
    ["an exclude entry is not an IP or CIDR", ["10.1.2"], 'invalid exclude entry "10.1.2"'],
    ["an exclude entry is outside the subnet", ["10.1.3.0/28"], "invalid exclude entry 10.1.3.0/28"],
  ] as const) {
    defineProbe({
      id: "P09",
      plugin: "host-local",
      title: `ADD answers code 7 naming exclude when ${when}`,
      inv: withConfig("host-local", (c) => ({ ...c, ipam: { ...(c.ipam as object), ranges: [[{ subnet: "10.1.2.0/24", exclude }]] } })),
      code: 7,
      msg,
      go: "success",
      why: "upstream has no `exclude` and ignores the key (DIFFERENCES.md)",
    });
  }
  defineProbe({
    id: "P09",
    plugin: "host-local",
    title: "ADD answers code 7 when two range sets overlap",
    inv: withConfig("host-local", (c) => ({
      ...c,
      ipam: { ...(c.ipam as object), ranges: [[{ subnet: "10.1.2.0/24" }], [{ subnet: "10.1.2.0/25" }]] },
    })),
    code: 7,
    msg: "range set 0 overlaps with 1",
    go: 999,
  });
  defineProbe({
    id: "P09",
    plugin: "host-local",
    title: "ADD answers code 7 when no range is configured",
    inv: withConfig("host-local", (c) => ({ ...c, ipam: { type: "host-local", dataDir: (c.ipam as { dataDir: string }).dataDir } })),
    code: 7,
    msg: "no IP ranges specified",
    go: 999,
  });
  defineProbe({
    id: "P09",
    plugin: "host-local",
    title: "DEL answers code 7 when the config is invalid",
    inv: withConfig("host-local", (c) => ({ ...c, ipam: { ...(c.ipam as object), ranges: [[{ subnet: "10.1.2.3/24" }]] } }), "DEL"),
    code: 7,
    msg: "Network has host bits set",
    go: 999,
  });
  test("host-local hands out the single address of a /30 (P09)", async () => {
    const ctx = await freshCtx();
    const conf = hostLocalConfig({ name: NET, cniVersion: "1.0.0", dataDir: ctx.dataDir, ranges: [[{ subnet: "10.1.2.0/30" }]] });
    expect(expectResult(await execPlugin("host-local", { ...baseInv("host-local", ctx), config: conf })).ips[0].address).toBe("10.1.2.2/30");
  });
  test("host-local hands out .1 when the gateway is elsewhere in the subnet (P09)", async () => {
    const ctx = await freshCtx();
    const conf = hostLocalConfig({ name: NET, cniVersion: "1.0.0", dataDir: ctx.dataDir, ranges: [[{ subnet: "10.20.0.0/29", gateway: "10.20.0.6" }]] });
    const r = expectResult(await execPlugin("host-local", { ...baseInv("host-local", ctx), config: conf }));
    expect(r.ips).toEqual([{ address: "10.20.0.1/29", gateway: "10.20.0.6" }]);
  });

  // P06 — a network name too long for a directory name (the store is <dataDir>/<name>).
  for (const command of ["ADD", "DEL"]) {
    defineProbe({
      id: "P06",
      plugin: "host-local",
      title: `${command} fails naming the cause when the network name has 1000 characters`,
      inv: withConfig("host-local", (c) => ({ ...c, name: `n${"x".repeat(999)}` }), command),
      code: 999,
      msg: "file name too long",
      go: 999,
    });
  }

  // P10 — exhaustion.
  defineProbe({
    id: "P10",
    plugin: "host-local",
    title: "ADD answers an error naming the range set when a /30 is exhausted",
    setup: (ctx) => {
      mkdirSync(join(ctx.dataDir, NET), { recursive: true });
      writeFileSync(join(ctx.dataDir, NET, "10.1.2.2"), "other-ctr\r\neth0");
    },
    inv: withConfig("host-local", (c) => ({ ...c, ipam: { ...(c.ipam as object), ranges: [[{ subnet: "10.1.2.0/30" }]] } })),
    code: 999,
    msg: "no IP addresses available in range set: 10.1.2.1-10.1.2.2",
    go: 999,
  });

  // P11 — DEL twice / never added; CHECK after DEL.
  for (const plugin of PLUGINS) {
    test(`${plugin} DEL of a never-added container succeeds, twice (P11)`, async () => {
      const ctx = await freshCtx();
      for (let i = 0; i < 2; i++) expectSuccess(await execPlugin(plugin, baseInv(plugin, ctx, "DEL")), { silent: true });
    });
    test(`${plugin} ADD, DEL, DEL succeeds and leaves nothing (P11)`, async () => {
      const ctx = await freshCtx();
      const before = snapshot(ctx);
      expectResult(await execPlugin(plugin, baseInv(plugin, ctx, "ADD")));
      expectSuccess(await execPlugin(plugin, baseInv(plugin, ctx, "DEL")));
      expectSuccess(await execPlugin(plugin, baseInv(plugin, ctx, "DEL")));
      const after = snapshot(ctx);
      expect(after.store).toBe(before.store);
      expect(after.host).toBe(before.host);
    });
  }
  test("host-local CHECK after DEL fails naming the container (P11)", async () => {
    const ctx = await freshCtx();
    const result = expectResult(await execPlugin("host-local", baseInv("host-local", ctx, "ADD")));
    expectSuccess(await execPlugin("host-local", baseInv("host-local", ctx, "DEL")));
    const conf = { ...baseConfig("host-local", ctx), prevResult: result };
    expectCniError(await execPlugin("host-local", { ...baseInv("host-local", ctx, "CHECK"), config: conf }), {
      code: 999,
      msg: "probe-ctr",
    });
  });

  // P12 — DEL with the netns gone.
  for (const plugin of PLUGINS) {
    test(`${plugin} DEL succeeds and releases everything when the netns is gone (P12)`, async () => {
      const ctx = await freshCtx();
      const before = snapshot(ctx);
      expectResult(await execPlugin(plugin, baseInv(plugin, ctx, "ADD")));
      await ctx.ns.destroy();
      expectSuccess(await execPlugin(plugin, baseInv(plugin, ctx, "DEL")), { silent: true });
      expect(snapshot(ctx).store).toBe(before.store);
    });
  }

  // P13 — ADD twice.
  test("host-local second ADD for the same container and ifname fails and reserves nothing more (P13)", async () => {
    const ctx = await freshCtx();
    expectResult(await execPlugin("host-local", baseInv("host-local", ctx)));
    const before = snapshot(ctx);
    expectCniError(await execPlugin("host-local", baseInv("host-local", ctx)), {
      code: 999,
      msg: "10.1.2.2 has been allocated to probe-ctr, duplicate allocation is not allowed",
    });
    expect(snapshot(ctx)).toEqual(before);
  });
  for (const plugin of ["loopback", "static"] as const) {
    test(`${plugin} second ADD for the same container succeeds with the same result (P13)`, async () => {
      const ctx = await freshCtx();
      const a = expectResult(await execPlugin(plugin, baseInv(plugin, ctx)));
      const b = expectResult(await execPlugin(plugin, baseInv(plugin, ctx)));
      expect(b).toEqual(a);
    });
  }

  // P21 — GC and STATUS.
  for (const plugin of PLUGINS) {
    for (const command of ["GC", "STATUS"]) {
      test(`[1.1.0] ${plugin} ${command} succeeds with libcni's empty variables (P21)`, async () => {
        const ctx = await freshCtx();
        const conf = { ...baseConfig(plugin, ctx, "1.1.0"), "cni.dev/valid-attachments": [] };
        expectSuccess(
          await execPlugin(plugin, { command, containerID: "", netns: "", ifName: "", args: "", config: conf }),
          { silent: true },
        );
      });
      defineProbe({
        id: "P21",
        plugin,
        title: `[1.0.0] ${command} answers code 1 because the config version does not allow it`,
        inv: (ctx) => ({ command, config: baseConfig(plugin, ctx, "1.0.0") }),
        code: 1,
        msg: `config version does not allow ${command}`,
        go: 3,
        why: "Go 1.1.1 predates GC/STATUS: it validates the (empty) container ID first and answers 3",
      });
    }
  }

  // P22 — CHECK.
  defineProbe({
    id: "P22",
    plugin: "static",
    title: "CHECK answers code 7 naming prevResult when it is missing",
    inv: (ctx) => baseInv("static", ctx, "CHECK"),
    code: 7,
    msg: "Required prevResult missing",
    go: 999,
  });
  defineProbe({
    id: "P22",
    plugin: "host-local",
    title: "CHECK answers an error naming the container when it holds no address",
    inv: (ctx) => baseInv("host-local", ctx, "CHECK"),
    code: 999,
    msg: "probe-ctr",
    go: 999,
  });
  defineProbe({
    id: "P22",
    plugin: "loopback",
    title: "CHECK answers an error when lo is down",
    inv: (ctx) => baseInv("loopback", ctx, "CHECK"),
    code: 999,
    msg: "loopback interface is down",
    go: 999,
  });

  // P25 — static validation.
  const staticBad: [string, (c: Record<string, any>) => unknown, Partial<PluginInvocation>, string][] = [
    ["a config address is not CIDR", (c) => ({ ...c, ipam: { ...c.ipam, addresses: [{ address: "10.10.0.1" }] } }), {}, "the 'address' field is expected to be in CIDR notation, got: '10.10.0.1'"],
    ["a CNI_ARGS IP is not CIDR", (c) => c, { args: "IP=10.10.0.9" }, "the 'ip' field is expected to be in CIDR notation, got: '10.10.0.9'"],
    ["an args.cni.ips entry is not CIDR", (c) => ({ ...c, args: { cni: { ips: ["10.10.0.9"] } } }), {}, "an entry in the 'ips' field is NOT in CIDR notation, got: '10.10.0.9'"],
    ["a runtimeConfig.ips entry is not CIDR", (c) => ({ ...c, runtimeConfig: { ips: ["bogus"] } }), {}, "an entry in the 'ips' field is NOT in CIDR notation, got: 'bogus'"],
    ["a CNI_ARGS GATEWAY is not an IP", (c) => c, { args: "IP=10.10.0.9/24;GATEWAY=bogus" }, "invalid gateway address: bogus"],
    ["the ipam key is missing", ({ ipam: _ipam, ...c }) => c, {}, "IPAM config missing 'ipam' key"],
  ];
  for (const [when, edit, extra, msg] of staticBad) {
    defineProbe({
      id: "P25",
      plugin: "static",
      title: `ADD answers code 7 when ${when}`,
      inv: (ctx) => ({ ...baseInv("static", ctx), config: edit(baseConfig("static", ctx) as Record<string, any>), ...extra }),
      code: 7,
      msg,
      go: 999,
    });
  }
  defineProbe({
    id: "P25",
    plugin: "static",
    title: "ADD answers code 7 naming the field when a route dst is not CIDR",
    inv: withConfig("static", (c: Record<string, any>) => ({ ...c, ipam: { ...c.ipam, routes: [{ dst: "10.0.0.0" }] } })),
    code: 7,
    msg: /10\.0\.0\.0/,
    go: 999,
  });

  // P26 — CNI_ARGS.
  for (const plugin of ["host-local", "static"] as const) {
    defineProbe({
      id: "P26",
      plugin,
      title: "ADD answers code 4 naming the key when CNI_ARGS has an unknown key",
      inv: withInv(plugin, { args: "FOO=bar" }),
      code: 4,
      msg: 'ARGS: unknown args ["FOO=bar"]',
      go: 999,
    });
    defineProbe({
      id: "P26",
      plugin,
      title: "ADD answers code 4 when a CNI_ARGS pair has no =",
      inv: withInv(plugin, { args: "IgnoreUnknown=1;JUNK" }),
      code: 4,
      msg: 'ARGS: invalid pair "JUNK"',
      go: 999,
    });
    defineProbe({
      id: "P26",
      plugin,
      title: "ADD answers code 4 when IgnoreUnknown is not a boolean",
      inv: withInv(plugin, { args: "IgnoreUnknown=maybe" }),
      code: 4,
      msg: 'ARGS: error parsing value of pair "IgnoreUnknown=maybe"',
      go: 999,
    });
    test(`${plugin} ADD accepts unknown CNI_ARGS keys with IgnoreUnknown=1 (P26)`, async () => {
      const ctx = await freshCtx();
      expectResult(await execPlugin(plugin, { ...baseInv(plugin, ctx), args: "IgnoreUnknown=1;K8S_POD_NAME=web;FOO=bar" }));
    });
  }
  test("loopback ADD ignores malformed CNI_ARGS (P26)", async () => {
    const ctx = await freshCtx();
    expectResult(await execPlugin("loopback", { ...baseInv("loopback", ctx), args: "JUNK;FOO=bar=baz" }));
  });
  for (const [when, ip, msg] of [
    ["outside every range", "10.9.9.9", "failed to allocate all requested IPs: 10.9.9.9"],
    ["the gateway", "10.1.2.1", "requested ip 10.1.2.1 is subnet's gateway"],
    ["the network address", "10.1.2.0", "10.1.2.0"],
    ["the broadcast address", "10.1.2.255", "10.1.2.255"],
    ["not an IP", "banana", "banana"],
  ] as const) {
    defineProbe({
      id: "P26",
      plugin: "host-local",
      title: `ADD refuses a CNI_ARGS IP that is ${when}`,
      inv: withInv("host-local", { args: `IP=${ip}` }),
      code: ip === "banana" ? 4 : 999,
      msg,
      go: 999,
    });
  }

  // P30 — host-local store damage.
  test("host-local ADD reclaims an empty reservation file (a crash leftover, #498) under the lock (P30)", async () => {
    const ctx = await freshCtx();
    mkdirSync(join(ctx.dataDir, NET), { recursive: true });
    writeFileSync(join(ctx.dataDir, NET, "10.1.2.2"), "");
    const r = expectResult(await execPlugin("host-local", baseInv("host-local", ctx)));
    expect(r.ips[0].address).toBe("10.1.2.2/24");
    expect(readFileSync(join(ctx.dataDir, NET, "10.1.2.2"), "latin1")).not.toBe("");
  });
  for (const [when, content] of [
    ["garbage", "not-an-ip"],
    ["an address outside the range", "192.168.77.77"],
    ["an IPv6 address for an IPv4 range", "fd00::5"],
  ] as const) {
    test(`host-local ADD tolerates a last_reserved_ip holding ${when} (P30)`, async () => {
      const ctx = await freshCtx();
      mkdirSync(join(ctx.dataDir, NET), { recursive: true });
      writeFileSync(join(ctx.dataDir, NET, "last_reserved_ip.0"), content);
      const r = expectResult(await execPlugin("host-local", baseInv("host-local", ctx)));
      expect(r.ips[0].address).toBe("10.1.2.2/24");
    });
  }
  defineProbe({
    id: "P30",
    plugin: "host-local",
    title: "ADD fails naming dataDir when it is a regular file",
    inv: (ctx) => {
      const file = join(ctx.scratch, "not-a-dir");
      writeFileSync(file, "");
      return { ...baseInv("host-local", ctx), config: hostLocalConfig({ name: NET, cniVersion: "1.0.0", dataDir: file }) };
    },
    code: 999,
    msg: "not-a-dir",
    go: 999,
  });
  test("host-local resolves a relative dataDir against its working directory (P30)", async () => {
    const ctx = await freshCtx();
    const conf = hostLocalConfig({ name: NET, cniVersion: "1.0.0", dataDir: "rel-store" });
    expectResult(await execPlugin("host-local", { ...baseInv("host-local", ctx), config: conf, cwd: ctx.scratch }));
    expect(readStoreDir(join(ctx.scratch, "rel-store", NET)).map((f) => f.name)).toContain("10.1.2.2");
  });
  test("host-local ADD accepts a 1000-character container ID and records it (P05)", async () => {
    const ctx = await freshCtx();
    const id = `c${"x".repeat(999)}`;
    expectResult(await execPlugin("host-local", { ...baseInv("host-local", ctx), containerID: id }));
    expect(readStoreDir(join(ctx.dataDir, NET)).find((f) => f.name === "10.1.2.2")?.content).toBe(`${id}\r\neth0`);
  });
  for (const ifName of ["eth0123456789ab", "ethü0", "-eth0"]) {
    test(`host-local ADD accepts the interface name ${JSON.stringify(ifName)} (P04)`, async () => {
      const ctx = await freshCtx();
      expectResult(await execPlugin("host-local", { ...baseInv("host-local", ctx), ifName }));
      expect(readStoreDir(join(ctx.dataDir, NET)).find((f) => f.name === "10.1.2.2")?.content).toBe(`probe-ctr\r\n${ifName}`);
    });
  }
});
