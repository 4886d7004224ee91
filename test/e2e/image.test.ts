/**
 * The installer image (`make image`: deploy/image-rootfs.sh + deploy/Containerfile, FROM scratch)
 * built offline with podman on a private store, then run the way deploy/daemonset.yaml runs it
 * (default command, read-only root, every capability dropped, the bin directory mounted at
 * /host/opt/cni/bin):
 * - into a temporary directory holding another project's plugin: every name installed as a link to
 *   one executable that works, the other plugin untouched; a second run writes nothing;
 * - while a loop keeps executing the installed plugins, the directory is flipped between the Go
 *   bridge binary (installed by the host's `cni-plugins install --source`) and the image's build
 *   several times: no exec may ever fail (no missing file, no ETXTBSY, no half-written executable);
 * - the release archive is one manifest list (an OCI image index, read as the OCI image spec
 *   defines it, every blob checked against its digest) of a linux/amd64 and a linux/arm64 image,
 *   each holding its own architecture's executable, shim and loader.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pluginNames } from "../../registry/registry.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { GO_BIN_DIR, MULTI_CALL_BINARY, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { OUR_BIN, rowTest } from "./lib/plugins.ts";
import { E2E_CACHE, commandMissing, run, show } from "./lib/tools.ts";

const NAMES = pluginNames();
const STATE = join(E2E_CACHE, "podman-image");
const RUNROOT = "/run/cni-ts-e2e-podman-image";
const IMAGE_NAME = "localhost/cni-plugins-ts-e2e";
const IMAGE = `${IMAGE_NAME}:latest`;
/** Where `make image` writes the archive (kept out of the checkout's dist/). */
const RELEASE = join(STATE, "release");
const SETUP = join(import.meta.dir, "setup", "podman-setup.sh");
const env = {
  CONTAINERS_CONF: join(STATE, "containers.conf"),
  CONTAINERS_STORAGE_CONF: join(STATE, "storage.conf"),
  CONTAINERS_REGISTRIES_CONF: join(STATE, "registries.conf"),
};
const podman = (args: string[]) => run(["podman", ...args], { env, timeoutMs: 180_000 });
/** As deploy/daemonset.yaml's init container: uid 0, read-only root, no capabilities. */
const installInto = (dir: string) =>
  podman(["run", "--rm", "--network=none", "--user=0", "--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges", "-v", `${dir}:/host/opt/cni/bin`, IMAGE]);

const skipReason = !sandboxed() ? "needs root in the e2e sandbox" : commandMissing("podman");
let setupError: string | undefined;

if (skipReason !== undefined) process.stderr.write(`SKIP image: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)("installer image (make image) and `cni-plugins install`", () => {
  useFixtureCleanup();

  beforeAll(async () => {
    rmSync(RELEASE, { recursive: true, force: true });
    mkdirSync(RUNROOT, { recursive: true });
    Bun.spawnSync(["mount", "-t", "tmpfs", "e2e-podman-image-run", RUNROOT]);
    const setup = await run(["bash", SETUP, OUR_BIN, STATE], { env: { PODMAN_RUNROOT: RUNROOT }, timeoutMs: 180_000 });
    if (setup.status !== 0) {
      setupError = `podman-setup.sh failed: ${show(setup)}`;
      return;
    }
    const made = await run(["make", "-C", REPO_ROOT, "--no-print-directory", "image", `IMAGE_NAME=${IMAGE_NAME}`, `RELEASE_DIR=${RELEASE}`], { env, timeoutMs: 280_000 });
    if (made.status !== 0) setupError = `make image failed: ${show(made)}`;
  }, 300_000);

  afterAll(async () => {
    const tags = (await podman(["images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE_NAME])).stdout.trim().split("\n").filter((t) => t !== "");
    if (tags.length > 0) await podman(["rmi", "-f", ...tags]);
    await podman(["image", "prune", "-f"]);
    Bun.spawnSync(["umount", "-l", RUNROOT]);
  });

  rowTest("image: FROM scratch, installs into an empty directory, keeps other plugins, second run writes nothing", undefined, async () => {
    expect(setupError).toBeUndefined();
    const inspect = JSON.parse((await podman(["image", "inspect", IMAGE])).stdout) as { Config: { Entrypoint: string[]; Cmd: string[] }; RootFS: { Layers: string[] } }[];
    expect(inspect[0]!.RootFS.Layers).toHaveLength(1); // FROM scratch: only the COPY of deploy/image-rootfs.sh's tree
    expect(inspect[0]!.Config.Entrypoint).toEqual(["/bin/cni-plugins", "install"]);
    expect(inspect[0]!.Config.Cmd).toEqual(["--dest", "/host/opt/cni/bin"]);

    const dir = makeTempDir("cni-e2e-image-bin-");
    writeFileSync(join(dir, "sriov"), "another project's plugin\n");
    const sriovIno = statSync(join(dir, "sriov")).ino;
    const first = await installInto(dir);
    expect(show(first)).toStartWith("exit=0");
    expect(first.stdout).toContain(`cni-plugins install: ${NAMES.length + 2} written, 0 unchanged in /host/opt/cni/bin`);
    expect(readdirSync(dir).sort()).toEqual(["cni-plugins", "cni-plugins-shim", "sriov", ...NAMES].sort());
    const bin = statSync(join(dir, "cni-plugins"));
    const shim = statSync(join(dir, "cni-plugins-shim"));
    expect(bin.mode & 0o777).toBe(0o755);
    expect(shim.mode & 0o777).toBe(0o755);
    for (const n of NAMES) expect(lstatSync(join(dir, n)).ino).toBe(shim.ino);
    expect(readFileSync(join(dir, "sriov"), "utf8")).toBe("another project's plugin\n");
    expect(statSync(join(dir, "sriov")).ino).toBe(sriovIno);
    expect(show(await run(["cmp", join(dir, "cni-plugins"), MULTI_CALL_BINARY]))).toStartWith("exit=0");
    expect(show(await run(["cmp", join(dir, "cni-plugins-shim"), join(MULTI_CALL_BINARY, "..", "cni-plugins-shim")]))).toStartWith("exit=0");
    const version = await run([join(dir, "bridge")], { env: { CNI_COMMAND: "VERSION" } });
    expect(show(version)).toStartWith("exit=0");
    expect(JSON.parse(version.stdout).supportedVersions).toContain("1.1.0");

    const second = await installInto(dir);
    expect(show(second)).toStartWith("exit=0");
    expect(second.stdout).toBe(`cni-plugins install: 0 written, ${NAMES.length + 2} unchanged in /host/opt/cni/bin\n`);
    expect(statSync(join(dir, "cni-plugins")).ino).toBe(bin.ino);
    expect(statSync(join(dir, "cni-plugins")).mtimeMs).toBe(bin.mtimeMs);
  }, 240_000);

  rowTest("image: the release archive is one manifest list of a linux/amd64 and a linux/arm64 image", undefined, async () => {
    expect(setupError).toBeUndefined();
    const archives = readdirSync(RELEASE).filter((f) => /^cni-plugins-ts-image-.*\.oci\.tar$/.test(f));
    expect(archives).toHaveLength(1);
    expect(readFileSync(join(RELEASE, "SHA256SUMS"), "utf8")).toContain(`  ${archives[0]}\n`);
    const layout = makeTempDir("cni-e2e-image-oci-");
    expect(show(await run(["tar", "-xf", join(RELEASE, archives[0]!), "-C", layout]))).toStartWith("exit=0");
    // a blob by descriptor: its bytes must hash to the digest and have the size the descriptor says
    type Descriptor = { mediaType: string; digest: string; size: number; platform?: { architecture: string; os: string } };
    const blob = (d: Descriptor): Buffer => {
      const bytes = readFileSync(join(layout, "blobs", ...d.digest.split(":")));
      expect(`sha256:${createHash("sha256").update(bytes).digest("hex")}`).toBe(d.digest);
      expect(bytes.length).toBe(d.size);
      return bytes;
    };
    const top = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Descriptor[] };
    expect(top.manifests).toHaveLength(1);
    expect(top.manifests[0]!.mediaType).toBe("application/vnd.oci.image.index.v1+json");
    const list = JSON.parse(blob(top.manifests[0]!).toString()) as { manifests: Descriptor[] };
    const platforms = list.manifests.map((m) => `${m.platform?.os}/${m.platform?.architecture}`).sort();
    expect(platforms).toEqual(["linux/amd64", "linux/arm64"]);
    const machines: Record<string, string> = { amd64: "Advanced Micro Devices X86-64", arm64: "AArch64" };
    const loaders: Record<string, string> = { amd64: "lib64/ld-linux-x86-64.so.2", arm64: "lib/ld-linux-aarch64.so.1" };
    for (const m of list.manifests) {
      const arch = m.platform!.architecture;
      const manifest = JSON.parse(blob(m).toString()) as { config: Descriptor; layers: Descriptor[] };
      expect((JSON.parse(blob(manifest.config).toString()) as { architecture: string }).architecture).toBe(arch);
      expect(manifest.layers).toHaveLength(1); // FROM scratch: the COPY of the root filesystem
      const rootfs = makeTempDir(`cni-e2e-image-${arch}-`);
      const layer = join(layout, "blobs", ...manifest.layers[0]!.digest.split(":"));
      blob(manifest.layers[0]!);
      expect(show(await run(["tar", "-xf", layer, "-C", rootfs]))).toStartWith("exit=0");
      for (const exe of ["bin/cni-plugins", "bin/cni-plugins-shim"]) {
        const header = await run(["readelf", "-h", join(rootfs, exe)]);
        expect(`${arch} ${exe}: ${/Machine:\s*(.*)/.exec(header.stdout)?.[1]?.trim()}`).toBe(`${arch} ${exe}: ${machines[arch]}`);
      }
      expect(statSync(join(rootfs, loaders[arch]!)).isFile()).toBe(true);
    }
  }, 120_000);

  rowTest("image: upgrades under a loop that keeps executing the plugins never make an exec fail", undefined, async () => {
    expect(setupError).toBeUndefined();
    const dir = makeTempDir("cni-e2e-image-swap-");
    const goBridge = join(GO_BIN_DIR, "bridge");
    const installGo = () => run([MULTI_CALL_BINARY, "install", "--dest", dir, "--source", goBridge]);
    expect(show(await installGo())).toStartWith("exit=0");

    const probe = ["bridge", "host-local", "portmap", "loopback"];
    const failures: string[] = [];
    const seen = { go: 0, ours: 0 };
    let running = true;
    const loop = (async () => {
      for (let i = 0; running; i++) {
        const name = probe[i % probe.length]!;
        try {
          const r = await run([join(dir, name)], { env: { CNI_COMMAND: "VERSION" }, timeoutMs: 30_000 });
          const versions = (JSON.parse(r.stdout) as { supportedVersions?: string[] }).supportedVersions ?? [];
          if (r.status !== 0 || versions.length === 0) failures.push(`${name}: ${show(r)}`);
          else if (versions.includes("1.1.0")) seen.ours++;
          else seen.go++;
        } catch (err) {
          failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    })();
    try {
      for (let round = 0; round < 3; round++) {
        expect(show(await installInto(dir))).toStartWith("exit=0");
        if (round < 2) expect(show(await installGo())).toStartWith("exit=0");
      }
    } finally {
      running = false;
      await loop;
    }
    process.stderr.write(`NOTE image: ${seen.go + seen.ours} execs during 5 swaps (${seen.go} answered by Go, ${seen.ours} by ours)\n`);
    expect(failures).toEqual([]);
    expect(seen.go).toBeGreaterThan(0);
    expect(seen.ours).toBeGreaterThan(0);
    expect(readdirSync(dir).filter((f) => f.startsWith("."))).toEqual([]);
    for (const n of NAMES) expect(statSync(join(dir, n)).ino).toBe(statSync(join(dir, "cni-plugins-shim")).ino);
  }, 240_000);
});
