/**
 * deploy/ stays consistent with itself and with `cni-plugins install`: the DaemonSet's init
 * container runs the image's own entrypoint and command, with the node's /opt/cni/bin mounted at
 * the `--dest` it names; the long-running container is the reload watcher, chrooted into the node's
 * root file system mounted at the `--host-root` it names; the Containerfile's entrypoint is the
 * executable image-rootfs.sh puts in the image; the manifest's image is what `make image` tags; the
 * agent's unit exits when idle and is not restarted then; the Debian maintainer scripts parse and
 * name every unit. (test/e2e/image.test.ts builds and runs the image itself; test/e2e/deb-systemd.test.ts
 * runs the maintainer scripts.)
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { METRICS_PORT, parseServeFlags } from "../agent/flags.ts";

const DEPLOY = join(resolve(import.meta.dir, ".."), "deploy");

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: { privileged?: boolean };
}
interface DaemonSet {
  kind: string;
  spec: {
    template: {
      metadata: { annotations?: Record<string, string> };
      spec: {
        hostNetwork?: boolean;
        hostPID?: boolean;
        initContainers: Container[];
        containers: Container[];
        volumes: { name: string; hostPath?: { path: string; type?: string } }[];
      };
    };
  };
}

/** The JSON-form array of a Containerfile instruction (`ENTRYPOINT ["a", "b"]`). */
function instruction(text: string, name: string): string[] {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  expect(line).toBeDefined();
  return JSON.parse(line!.slice(name.length + 1)) as string[];
}

describe("deploy/", () => {
  const ds = Bun.YAML.parse(readFileSync(join(DEPLOY, "daemonset.yaml"), "utf8")) as DaemonSet;
  const containerfile = readFileSync(join(DEPLOY, "Containerfile"), "utf8");

  test("daemonset.yaml: the init container runs the image's install command into the hostPath /opt/cni/bin", () => {
    expect(ds.kind).toBe("DaemonSet");
    const [init] = ds.spec.template.spec.initContainers;
    expect(init).toBeDefined();
    expect([...(init!.command ?? []), ...(init!.args ?? [])]).toEqual([...instruction(containerfile, "ENTRYPOINT"), ...instruction(containerfile, "CMD")]);
    const args = instruction(containerfile, "CMD");
    const dest = args[args.indexOf("--dest") + 1];
    const mount = init!.volumeMounts?.find((m) => m.mountPath === dest);
    expect(mount).toBeDefined();
    const volume = ds.spec.template.spec.volumes.find((v) => v.name === mount!.name);
    expect(volume?.hostPath).toEqual({ path: "/opt/cni/bin", type: "DirectoryOrCreate" });
    const imageName = /^IMAGE_NAME \?= (\S+)$/m.exec(readFileSync(join(DEPLOY, "..", "Makefile"), "utf8"))?.[1];
    expect(imageName).toBeDefined();
    expect(init!.image).toStartWith(`${imageName}:`); // what `make image` tags
  });

  /** The long-running containers run the installed executable in the host's namespaces through the image's shim. */
  function hostCommand(name: string): string[] {
    const pod = ds.spec.template.spec;
    expect([pod.hostNetwork, pod.hostPID]).toEqual([true, true]);
    const c = pod.containers.find((x) => x.name === name);
    expect(c).toBeDefined();
    expect(c!.image).toBe(pod.initContainers[0]!.image);
    expect(c!.securityContext?.privileged).toBe(true);
    const [shim, mode, pid, program, ...rest] = c!.command ?? [];
    // The image's own static shim (image-rootfs.sh installs it) joins PID 1's mount namespace ...
    expect(readFileSync(join(DEPLOY, "image-rootfs.sh"), "utf8")).toContain(`"$ROOTFS${shim}"`);
    expect([mode, pid]).toEqual(["--namespaces-of", "1"]);
    // ... and starts the executable the init container installed into the node's /opt/cni/bin.
    expect(program).toBe("/opt/cni/bin/cni-plugins");
    return [...rest, ...(c!.args ?? [])];
  }

  test("daemonset.yaml: the agent container runs `cni-plugins serve` in the host's namespaces", () => {
    expect(hostCommand("agent")[0]).toBe("serve");
  });

  test("daemonset.yaml and cni-plugins.service: the agent serves metrics on the documented port", () => {
    const agent = ds.spec.template.spec.containers.find((c) => c.name === "agent")!;
    const args = hostCommand("agent").slice(1);
    const at = args.indexOf("--metrics-address");
    expect(args[at + 1]).toBe(`$(NODE_IP):${METRICS_PORT}`);
    expect(agent.env?.find((e) => e.name === "NODE_IP")?.valueFrom?.fieldRef?.fieldPath).toBe("status.hostIP");
    // With the variable as kubelet substitutes it, the flags parse.
    expect(parseServeFlags(args.map((a) => a.replace("$(NODE_IP)", "192.0.2.10"))).metricsAddress).toEqual({ hostname: "192.0.2.10", port: METRICS_PORT });
    expect(agent.ports).toEqual([{ name: "metrics", containerPort: METRICS_PORT, protocol: "TCP" } as never]);
    expect(ds.spec.template.metadata.annotations).toMatchObject({ "prometheus.io/scrape": "true", "prometheus.io/port": String(METRICS_PORT) });
    const unit = readFileSync(join(DEPLOY, "systemd", "cni-plugins.service"), "utf8");
    const exec = unit.split("\n").find((l) => l.startsWith("ExecStart="))!.split(" ");
    expect(parseServeFlags(exec.slice(exec.indexOf("serve") + 1)).metricsAddress).toEqual({ hostname: "127.0.0.1", port: METRICS_PORT });
  });

  test("daemonset.yaml: the reload-watch container runs `cni-plugins reload --watch` in the host's namespaces", () => {
    expect(hostCommand("reload-watch")).toEqual(["reload", "--watch"]);
    expect(ds.spec.template.spec.containers.map((c) => c.name).sort()).toEqual(["agent", "reload-watch"]);
  });

  test("cni-plugins.service: an agent that exits when idle stays exited (the socket starts it), a crash is restarted", () => {
    const unit = readFileSync(join(DEPLOY, "systemd", "cni-plugins.service"), "utf8");
    const exec = unit.split("\n").find((l) => l.startsWith("ExecStart="))!.split(" ");
    expect(parseServeFlags(exec.slice(exec.indexOf("serve") + 1)).idleExitS).toBeGreaterThan(0);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(readFileSync(join(DEPLOY, "systemd", "cni-plugins.socket"), "utf8")).toMatch(/^Service=cni-plugins\.service$/m);
  });

  test("debian/: the maintainer scripts are POSIX sh that parses, and each handles every unit the package ships", () => {
    const units = readdirSync(join(DEPLOY, "systemd")).filter((f) => /\.(service|socket)$/.test(f));
    expect(units.length).toBeGreaterThan(0);
    for (const script of ["postinst", "prerm", "postrm"]) {
      const path = join(DEPLOY, "debian", script);
      const text = readFileSync(path, "utf8");
      expect(text).toStartWith("#!/bin/sh\n");
      expect(text).toMatch(/^set -e$/m);
      expect(Bun.spawnSync(["sh", "-n", path]).exitCode).toBe(0);
      expect(`${script}: ${units.filter((u) => !text.includes(u)).join(" ")}`).toBe(`${script}: `);
    }
  });

  test("Containerfile: FROM scratch, entrypoint = the executable image-rootfs.sh installs, in install mode", () => {
    expect(containerfile).toMatch(/^FROM scratch$/m);
    const [exe, mode] = instruction(containerfile, "ENTRYPOINT");
    expect(mode).toBe("install");
    const rootfs = readFileSync(join(DEPLOY, "image-rootfs.sh"), "utf8");
    expect(rootfs).toContain(`"$ROOTFS${exe}"`);
  });
});
