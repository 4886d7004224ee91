/**
 * `make demo`: two throwaway containers on a bridge network, wired by our plugins through the
 * project's libcni-style conflist runner, then pinged and torn down again.
 *
 * Everything happens inside a throwaway "host" network namespace (this script re-executes itself
 * under `unshare -n`), so the machine's own links and firewall are never touched.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { staticBusybox } from "../harness/busybox.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { DIST_BIN } from "../harness/paths.ts";

if (process.env.CNI_DEMO_INNER !== "1") {
  const r = spawnSync("unshare", ["-n", process.execPath, import.meta.path], {
    stdio: "inherit",
    env: { ...process.env, CNI_DEMO_INNER: "1" },
  });
  process.exit(r.status ?? 1);
}

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = "") => console.log(s);
function sh(cmd: string[], ns?: ContainerNetns): { ok: boolean; out: string } {
  const argv = ns ? ["nsenter", `--net=${ns.path}`, ...cmd] : cmd;
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`.trim() };
}
function indent(text: string): string {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => `    ${l}`)
    .join("\n");
}

sh(["ip", "link", "set", "lo", "up"]);
const work = mkdtempSync(join(tmpdir(), "cni-demo-"));
const plugins: Record<string, unknown>[] = [
  {
    type: "bridge",
    bridge: "demo0",
    isGateway: true,
    ipMasq: true,
    ipam: {
      type: "host-local",
      dataDir: join(work, "ipam"),
      ranges: [[{ subnet: "10.88.0.0/24" }], [{ subnet: "fd88::/64" }]],
      routes: [{ dst: "0.0.0.0/0" }],
    },
  },
];
if (existsSync(join(DIST_BIN, "portmap"))) {
  plugins.push({ type: "portmap", capabilities: { portMappings: true }, snat: true });
}
if (existsSync(join(DIST_BIN, "firewall"))) {
  plugins.push({ type: "firewall" });
}
if (existsSync(join(DIST_BIN, "tuning"))) {
  plugins.push({ type: "tuning", sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1" } });
}
const list: NetworkConfigList = { cniVersion: "1.0.0", name: "demo-net", plugins };
const runner = new ConflistRunner({ cacheDir: join(work, "cache") });
const containers: { name: string; ns: ContainerNetns; ip4?: string; ip6?: string }[] = [];
let failed = false;

try {
  say(bold(`CNI demo — plugins from ${DIST_BIN}`));
  say(`network "${list.name}": ${plugins.map((p) => p.type).join(" → ")}`);
  for (const name of ["web", "client"]) {
    const ns = await createContainerNetns();
    containers.push({ name, ns });
    const result = (await runner.add(list, {
      containerID: `demo-${name}`,
      netns: ns.path,
      ifName: "eth0",
      capabilityArgs: name === "web" ? { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] } : {},
    })) as { ips?: { address: string; gateway?: string }[]; interfaces?: { name: string; sandbox?: string }[] };
    const c = containers[containers.length - 1]!;
    for (const ip of result.ips ?? []) {
      if (ip.address.includes(":")) c.ip6 = ip.address.split("/")[0]!;
      else c.ip4 = ip.address.split("/")[0]!;
    }
    say();
    say(bold(`ADD ${name}`) + ` (netns ${ns.path})`);
    for (const ip of result.ips ?? []) say(`    address ${ip.address}  gateway ${ip.gateway ?? "-"}`);
    say(`    interfaces: ${(result.interfaces ?? []).map((i) => (i.sandbox ? `${i.name} (in container)` : i.name)).join(", ")}`);
  }
  await Promise.all(containers.map((c) => runner.check(list, { containerID: `demo-${c.name}`, netns: c.ns.path, ifName: "eth0" })));
  say();
  say(bold("CHECK") + " both containers: ok");

  say();
  say(bold("Host side"));
  say(indent(sh(["ip", "-br", "addr", "show", "dev", "demo0"]).out));
  say(indent(sh(["ip", "-br", "link", "show", "master", "demo0"]).out));
  const masq = sh(["iptables-save", "-t", "nat"]).out.split("\n").filter((l) => l.includes("demo-") && !l.includes("--dport"));
  if (masq.length) say(indent(masq.join("\n")));

  say();
  say(bold("Pings"));
  const [web, client] = containers as [(typeof containers)[0], (typeof containers)[0]];
  const pings: [string, ContainerNetns, string | undefined][] = [
    ["client → web (IPv4)", client.ns, web.ip4],
    ["web → client (IPv4)", web.ns, client.ip4],
    ["client → gateway 10.88.0.1", client.ns, "10.88.0.1"],
    ["client → web (IPv6)", client.ns, web.ip6],
  ];
  for (const [label, ns, target] of pings) {
    if (!target) continue;
    const r = sh(["ping", "-c", "1", "-W", "2", target], ns);
    const rtt = /time=([\d.]+ ms)/.exec(r.out)?.[1] ?? "";
    say(`    ${r.ok ? "ok  " : "FAIL"} ${label.padEnd(30)} ${target} ${rtt}`);
    if (!r.ok) failed = true;
  }

  if (plugins.some((p) => p.type === "portmap")) {
    say();
    say(bold("Published port") + " (web container serves HTTP on :80, mapped to host port 8080)");
    const docroot = join(work, "www");
    mkdirSync(docroot, { recursive: true });
    writeFileSync(join(docroot, "index.html"), "hello from the web container\n");
    const server = spawn("nsenter", [`--net=${web.ns.path}`, staticBusybox(), "httpd", "-f", "-p", "80", "-h", docroot], {
      stdio: "ignore",
    });
    try {
      await Bun.sleep(300);
      for (const url of ["http://10.88.0.1:8080/", "http://127.0.0.1:8080/"]) {
        const r = sh(["curl", "-s", "-m", "3", url]);
        say(`    ${r.ok && r.out.includes("hello") ? "ok  " : "FAIL"} curl ${url.padEnd(26)} → ${r.out || "(no answer)"}`);
        if (!r.ok || !r.out.includes("hello")) failed = true;
      }
    } finally {
      server.kill("SIGKILL");
    }
  }
} catch (err) {
  failed = true;
  say(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  say();
  say(bold("DEL"));
  for (const c of [...containers].reverse()) {
    try {
      await runner.del(list, { containerID: `demo-${c.name}`, netns: c.ns.path, ifName: "eth0" });
      say(`    ${c.name}: removed`);
    } catch (err) {
      failed = true;
      say(`    ${c.name}: DEL failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    await c.ns.destroy();
  }
  const veths = sh(["ip", "-br", "link", "show", "type", "veth"]).out;
  // Per-container state only: the global CNI-HOSTPORT-* and CNI-FORWARD chains stay, as upstream's do.
  const chains = [...sh(["iptables-save", "-t", "nat"]).out.split("\n"), ...sh(["iptables-save", "-t", "filter"]).out.split("\n")]
    .filter((l) => l.includes("demo-") || l.includes("10.88.0.") || (/^:CNI-/.test(l) && !/^:CNI-(HOSTPORT-|FORWARD|ADMIN)/.test(l)));
  const ipamDir = join(work, "ipam", "demo-net");
  const reservations = existsSync(ipamDir) ? readdirSync(ipamDir).filter((f) => !f.startsWith(".") && f !== "lock" && !f.startsWith("last_reserved_ip")) : [];
  say();
  say(bold("Left behind"));
  say(`    veth links:        ${veths === "" ? "none" : veths}`);
  say(`    iptables rules:    ${chains.length === 0 ? "none" : chains.join(" | ")}`);
  say(`    IP reservations:   ${reservations.length === 0 ? "none" : reservations.join(", ")}`);
  say(`    (the bridge demo0 stays, as with the Go plugin; it vanishes with the throwaway namespace)`);
  if (veths !== "" || chains.length > 0 || reservations.length > 0) failed = true;
  rmSync(work, { recursive: true, force: true });
  say();
  say(failed ? bold("demo: FAILED") : bold("demo: ok"));
}
process.exit(failed ? 1 : 0);
