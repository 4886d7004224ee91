/**
 * The release tarball (`make dist`, deploy/dist.sh) as an operator uses it: built offline from the
 * checkout, checked against SHA256SUMS, laid out like upstream's (the executable once, every plugin
 * name a hard link inside the tar, LICENSE, README.md), extracted into an empty directory, and that
 * directory used as cnitool's CNI_PATH: ADD (bridge + host-local → portmap → firewall) with a
 * published port fetched from the host, CHECK, DEL, nothing left. The per-call log is switched on by
 * its environment variable and must show every plugin call, delegated IPAM included.
 */
import { describe, expect } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pluginNames } from "../../registry/registry.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { staticBusybox } from "../harness/busybox.ts";
import { fetchFromHost, leftovers, portNet, readCallLog } from "./lib/attach.ts";
import { rowTest } from "./lib/plugins.ts";
import { CNITOOL, run, show, toolMissing } from "./lib/tools.ts";

const NAMES = pluginNames();
/** The systemd units in build/, shipped in the tarball's systemd/. */
const UNITS = readdirSync(join(REPO_ROOT, "deploy", "systemd")).filter((f) => /\.(service|socket)$/.test(f));
const HOST_PORT = 38490;
let tarball: string | undefined;

describe.skipIf(!sandboxed())("release tarball (make dist)", () => {
  useFixtureCleanup();

  rowTest("make dist: SHA256SUMS, the executable once, a hard link per plugin, LICENSE, README.md, cni-reload.service", undefined, async () => {
    const made = await run(["make", "-C", REPO_ROOT, "--no-print-directory", "dist"], { timeoutMs: 280_000 });
    expect(show(made)).toStartWith("exit=0");
    const name = /^dist: (\S+\.tgz) /m.exec(made.stdout)?.[1];
    expect(name).toBeDefined();
    const file = join(REPO_ROOT, name!);
    const sums = await run(["sh", "-c", `cd "${join(file, "..")}" && sha256sum -c SHA256SUMS`]);
    expect(show(sums)).toStartWith("exit=0");
    expect(sums.stdout).toContain(`${name!.split("/").pop()}: OK`);

    // `tar -tv`: "-rwxr-xr-x 0/0 113662128 2026-11-23 23:56 ./cni-plugins",
    // "hrwxr-xr-x ... ./bridge link to ./cni-plugins-shim"
    const listing = (await run(["tar", "-tvzf", file])).stdout.trim().split("\n").map((l) => l.split(/\s+/));
    const entries = listing.map((f) => ({ mode: f[0]!, owner: f[1]!, path: f[5]!, linkTo: f[6] === "link" ? f[8] : undefined }));
    expect(entries.map((e) => e.path).sort()).toEqual(
      ["./LICENSE", "./README.md", "./cni-plugins", "./cni-plugins-shim", ...NAMES.map((n) => `./${n}`), ...UNITS.map((u) => `./systemd/${u}`), "./systemd/"].sort(),
    );
    expect(entries[0]).toMatchObject({ path: "./cni-plugins", mode: "-rwxr-xr-x", owner: "0/0" });
    expect(entries[1]).toMatchObject({ path: "./cni-plugins-shim", mode: "-rwxr-xr-x", owner: "0/0" });
    for (const n of NAMES) expect(entries.find((e) => e.path === `./${n}`)).toMatchObject({ mode: "hrwxr-xr-x", linkTo: "./cni-plugins-shim" });
    tarball = file;
  }, 300_000);

  rowTest("extracted into an empty directory: cnitool ADD/CHECK/DEL through it, port published, call log written, nothing left", toolMissing(CNITOOL, "run test/e2e/setup/prepare.sh"), async () => {
    expect(tarball).toBeDefined();
    const bin = makeTempDir("cni-e2e-dist-bin-");
    expect(show(await run(["tar", "-C", bin, "-xzf", tarball!]))).toStartWith("exit=0");
    expect(readdirSync(bin).sort()).toEqual(["LICENSE", "README.md", "cni-plugins", "cni-plugins-shim", "systemd", ...NAMES].sort());
    expect(readFileSync(join(bin, "systemd", "cni-reload.service"), "utf8")).toContain("ExecStart=/opt/cni/bin/cni-plugins reload --watch");
    const ino = statSync(join(bin, "cni-plugins-shim")).ino;
    for (const n of NAMES) expect(statSync(join(bin, n)).ino).toBe(ino);
    expect(readFileSync(join(bin, "systemd", "cni-plugins.service"), "utf8")).toContain("ExecStart=/opt/cni/bin/cni-plugins serve");

    const callLog = join(makeTempDir("cni-e2e-dist-log-"), "calls.jsonl");
    const ns = await createContainerNetns();
    const net = portNet({ name: "e2e-dist", bridge: "e2edist0", subnet: "10.85.1.0/24", hostPort: HOST_PORT, binDir: bin, env: { CNI_PLUGINS_CALL_LOG: callLog } }, ns.path);
    const add = await net.cnitool("add", ns.path);
    expect(show(add)).toStartWith("exit=0");
    const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split("/")[0]!;
    expect(show(await run(["nsenter", `--net=${ns.path}`, "--", "ping", "-c1", "-W3", net.gateway]))).toStartWith("exit=0");

    const www = makeTempDir("cni-e2e-dist-www-");
    await Bun.write(join(www, "index.html"), "hello from the tarball\n");
    const httpd = Bun.spawn(["nsenter", `--net=${ns.path}`, "--", staticBusybox(), "httpd", "-f", "-p", "80", "-h", www], { stdout: "ignore", stderr: "ignore" });
    try {
      expect(await fetchFromHost(HOST_PORT)).toBe("hello from the tarball\n");
    } finally {
      httpd.kill("SIGKILL");
    }
    expect(show(await net.cnitool("check", ns.path))).toStartWith("exit=0");
    expect(show(await net.cnitool("del", ns.path))).toStartWith("exit=0");
    expect(await leftovers({ name: "e2e-dist", dataDir: net.dataDir }, [`${ip}/`, `${ip}:`, "e2e-dist"])).toEqual([]);

    const calls = readCallLog(callLog);
    const seen = new Set(calls.map((c) => `${c.plugin} ${c.command} ${c.outcome}`));
    for (const cmd of ["ADD", "CHECK", "DEL"]) {
      for (const p of ["bridge", "host-local", "portmap", "firewall"]) expect(seen).toContain(`${p} ${cmd} ok`);
    }
    expect(calls.every((c) => c.containerID.startsWith("cnitool-"))).toBe(true);
    await ns.destroy();
  }, 180_000);
});
