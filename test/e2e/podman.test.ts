/**
 * podman 4.x with the CNI network backend on a private configuration (setup/podman-setup.sh:
 * private containers.conf / storage.conf, plugin dir = the build under test, busybox image made with
 * `podman import`, cached outside the repo). Inside the lane's throwaway netns + private mounts:
 * `podman network create`, two containers that ping each other, a published port fetched from the
 * host (needs portmap), stop + rm, and nothing left (veths, iptables rules, reservations, cache).
 * Closing measurement: `podman run --rm` wall time with our plugins vs the Go plugins.
 *
 * podman 4.3 always writes bridge → portmap → firewall → tuning into the conflist; plugins not built
 * yet are removed from the generated file (printed), so the rest still runs under the real client.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sandboxed } from "../harness/sandbox.ts";
import { GO_BIN_DIR, OUR_BIN, hasOurs, missingReason, rowTest } from "./lib/plugins.ts";
import { E2E_CACHE, commandMissing, run, show } from "./lib/tools.ts";

const STATE = join(E2E_CACHE, "podman");
const RUNROOT = "/run/cni-ts-e2e-podman";
const IMAGE = "localhost/e2e-busybox:latest";
const NET = "e2enet";
const SUBNET = "10.83.1.0/24";
const GW = "10.83.1.1";
const HOSTPORT = 38480;
const SETUP = join(import.meta.dir, "setup", "podman-setup.sh");

const env = {
  CONTAINERS_CONF: join(STATE, "containers.conf"),
  CONTAINERS_STORAGE_CONF: join(STATE, "storage.conf"),
  CONTAINERS_REGISTRIES_CONF: join(STATE, "registries.conf"),
};
/** The same podman, but with the Go plugins (for the timing comparison). */
const goEnv = { ...env, CONTAINERS_CONF: join(STATE, "containers-go.conf") };

const podman = (args: string[], e: Record<string, string> = env) => run(["podman", ...args], { env: e, timeoutMs: 120_000 });

const skipReason = !sandboxed() ? "needs root in the e2e sandbox" : commandMissing("podman") ?? missingReason(["bridge", "host-local"]);
let setupError: string | undefined;
let conflistNote = "";

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? NaN;
}

async function ipOf(name: string): Promise<string> {
  const r = await podman(["inspect", name, "--format", `{{(index .NetworkSettings.Networks "${NET}").IPAddress}}`]);
  return r.stdout.trim();
}

function leftoverReservations(): string[] {
  const dir = `/var/lib/cni/networks/${NET}`;
  if (!existsSync(dir)) return [];
  // (dot files: our host-local's private owner index, not reservations)
  return readdirSync(dir).filter((f) => f !== "lock" && !f.startsWith("last_reserved_ip") && !f.startsWith("."));
}

if (skipReason !== undefined) process.stderr.write(`SKIP podman: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)("podman (CNI backend) with our plugins", () => {
  beforeAll(async () => {
    // a fresh run root in the lane's private mount namespace: no stale state from earlier runs
    Bun.spawnSync(["mkdir", "-p", RUNROOT]);
    Bun.spawnSync(["mount", "-t", "tmpfs", "e2e-podman-run", RUNROOT]);
    const setup = await run(["bash", SETUP, OUR_BIN, STATE], { env: { PODMAN_RUNROOT: RUNROOT }, timeoutMs: 180_000 });
    if (setup.status !== 0) {
      setupError = `podman-setup.sh failed: ${show(setup)}`;
      return;
    }
    writeFileSync(goEnv.CONTAINERS_CONF, readFileSync(env.CONTAINERS_CONF, "utf8").replace(`cni_plugin_dirs = ["${OUR_BIN}"]`, `cni_plugin_dirs = ["${GO_BIN_DIR}"]`));
    await podman(["network", "rm", "-f", NET]);
    const made = await podman(["network", "create", "--subnet", SUBNET, "--gateway", GW, NET]);
    if (made.status !== 0) {
      setupError = `podman network create failed: ${show(made)}`;
      return;
    }
    const file = join(STATE, "net.d", `${NET}.conflist`);
    const list = JSON.parse(readFileSync(file, "utf8")) as { plugins: { type: string }[] };
    const absent = list.plugins.map((p) => p.type).filter((t) => !hasOurs(t));
    if (absent.length > 0) {
      conflistNote = ` (podman's conflist without ${absent.join(", ")}: not built yet)`;
      process.stderr.write(`NOTE podman: removed ${absent.join(", ")} from podman's generated conflist: not built yet\n`);
      list.plugins = list.plugins.filter((p) => hasOurs(p.type));
      writeFileSync(file, JSON.stringify(list, null, 2));
    }
  }, 240_000);

  afterAll(async () => {
    await podman(["rm", "-f", "-t", "0", "e2e-c1", "e2e-c2", "e2e-web"]);
    await podman(["network", "rm", "-f", NET]);
    Bun.spawnSync(["umount", "-l", RUNROOT]);
  });

  rowTest("podman: two containers ping each other; stop + rm leaves nothing", undefined, async () => {
    expect(setupError).toBeUndefined();
    const c1 = await podman(["run", "-d", "--name", "e2e-c1", "--network", NET, IMAGE, "sleep", "600"]);
    expect(show(c1)).toStartWith("exit=0");
    const c2 = await podman(["run", "-d", "--name", "e2e-c2", "--network", NET, "--ip", "10.83.1.200", IMAGE, "sleep", "600"]);
    expect(show(c2)).toStartWith("exit=0");
    const ip1 = await ipOf("e2e-c1");
    const ip2 = await ipOf("e2e-c2");
    expect(ip1).toStartWith("10.83.1.");
    expect(ip2).toBe("10.83.1.200");
    expect(show(await podman(["exec", "e2e-c1", "ping", "-c1", "-W3", ip2]))).toStartWith("exit=0");
    expect(show(await podman(["exec", "e2e-c2", "ping", "-c1", "-W3", ip1]))).toStartWith("exit=0");
    expect(show(await podman(["exec", "e2e-c1", "ping", "-c1", "-W3", GW]))).toStartWith("exit=0");
    expect(leftoverReservations().sort()).toEqual([ip1, ip2].sort());

    const ids = (await podman(["inspect", "e2e-c1", "e2e-c2", "--format", "{{.Id}}"])).stdout.trim().split("\n");
    expect(show(await podman(["stop", "-t", "0", "e2e-c1", "e2e-c2"]))).toStartWith("exit=0");
    expect(show(await podman(["rm", "e2e-c1", "e2e-c2"]))).toStartWith("exit=0");
    expect(leftoverReservations()).toEqual([]);
    expect(readdirSync("/var/lib/cni/results").filter((f) => f.startsWith(`${NET}-`))).toEqual([]);
    const rules = (await run(["iptables-save"])).stdout.split("\n").filter((l) => ids.some((id) => l.includes(id)) || l.includes("10.83.1."));
    expect(rules).toEqual([]);
    const br = (JSON.parse(readFileSync(join(STATE, "net.d", `${NET}.conflist`), "utf8")) as { plugins: { bridge?: string }[] }).plugins[0]?.bridge ?? "";
    expect((await run(["ip", "-o", "link", "show", "master", br])).stdout.trim()).toBe("");
  }, 180_000);

  rowTest("podman: -p published port fetched from the host", missingReason(["portmap"]), async () => {
    expect(setupError).toBeUndefined();
    const web = await podman(["run", "-d", "--name", "e2e-web", "--network", NET, "-p", `${HOSTPORT}:80`, IMAGE, "httpd", "-f", "-p", "80", "-h", "/www"]);
    expect(show(web)).toStartWith("exit=0");
    let body = "";
    for (let i = 0; i < 20 && body === ""; i++) {
      await Bun.sleep(200);
      body = (await run(["curl", "-s", "--max-time", "2", `http://127.0.0.1:${HOSTPORT}/`])).stdout;
    }
    expect(body.trim()).toBe("hello from e2e-busybox");
    const id = (await podman(["inspect", "e2e-web", "--format", "{{.Id}}"])).stdout.trim();
    expect(show(await podman(["rm", "-f", "-t", "0", "e2e-web"]))).toStartWith("exit=0");
    const rules = (await run(["iptables-save"])).stdout.split("\n").filter((l) => l.includes(id) || l.includes("10.83.1."));
    expect(rules).toEqual([]);
    expect(leftoverReservations()).toEqual([]);
  }, 180_000);

  rowTest("podman: run --rm wall time, ours vs Go (printed)", undefined, async () => {
    expect(setupError).toBeUndefined();
    const times: Record<string, number[]> = { ours: [], go: [] };
    for (let i = 0; i < 3; i++) {
      for (const [label, e] of [["ours", env], ["go", goEnv]] as const) {
        const r = await podman(["run", "--rm", "--network", NET, IMAGE, "true"], e);
        expect(show(r)).toStartWith("exit=0");
        times[label]!.push(Math.round(r.ms));
      }
    }
    process.stderr.write(
      `TIMING podman run --rm --network ${NET} true: ours ${times.ours!.join("/")} ms (median ${median(times.ours!)}), ` +
        `Go ${times.go!.join("/")} ms (median ${median(times.go!)})${conflistNote}\n`,
    );
    expect(leftoverReservations()).toEqual([]);
  }, 180_000);
});
