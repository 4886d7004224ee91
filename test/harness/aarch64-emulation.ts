/**
 * Running aarch64 executables on this amd64 host for the arm64 lane (test/run.ts): a binfmt_misc
 * handler of the lane's own (`cni-ts-aarch64`, interpreter test/arm64/qemu-binfmt.sh: qemu-user,
 * Cortex-A53) so that every exec of an arm64 file works as on an arm64 node: the shims, the
 * executable they fall back to, the IPAM plugins a plugin delegates to, the dhcp daemon, the agent.
 * Flags: F (the interpreter is opened now, so it also serves callers in other mount namespaces)
 * and P (argv[0] is kept: the multi-call executable is told the plugin name by it).
 * The handler is registered first, so it is matched before any older aarch64 handler of the host,
 * and removed when the lane ends; one left by a killed run is replaced.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./paths.ts";

const BINFMT = "/proc/sys/fs/binfmt_misc";
const NAME = "cni-ts-aarch64";
export const QEMU_AARCH64 = "/usr/bin/qemu-aarch64-static";
export const AARCH64_SYSROOT = "/usr/aarch64-linux-gnu";
export const EMULATED_CPU = "cortex-a53";
const INTERPRETER = join(REPO_ROOT, "test", "arm64", "qemu-binfmt.sh");
/** ELF64, little endian, ET_EXEC or ET_DYN, EM_AARCH64 (183): the header bytes and their mask. */
const MAGIC = "\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00";
const MASK = "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff";

/**
 * What qemu-user (Debian's 7.2) does not pass on to the kernel, so that a test needing it fails under
 * emulation whatever the code: the reasons the arm64 lane's skips print. The messages these paths
 * send are built by the same code on both architectures and checked byte for byte by the golden
 * tests, which the lane runs under Bun's aarch64 runtime.
 */
export const QEMU_USER_LACKS = {
  nfnetlink: "qemu-user opens no NETLINK_NETFILTER socket (EPROTONOSUPPORT; only NETLINK_ROUTE, NETLINK_KOBJECT_UEVENT and NETLINK_AUDIT)",
  rules: "qemu-user forwards no routing-rule netlink messages (RTM_NEWRULE, RTM_DELRULE, RTM_GETRULE: EOPNOTSUPP; its NETLINK_ROUTE translation knows links, addresses and routes only)",
  tc: "qemu-user forwards no tc netlink messages (RTM_NEWQDISC, RTM_NEWTFILTER: EOPNOTSUPP)",
  mountId: "qemu-user's statx(2) leaves stx_mnt_id 0 (its struct statx translation does not copy it) while stx_mask says STATX_MNT_ID",
} as const;

/** The argv prefix that runs an aarch64 executable under emulation without binfmt_misc. */
export function emulatorArgv(): string[] {
  return [QEMU_AARCH64, "-cpu", EMULATED_CPU, "-L", AARCH64_SYSROOT];
}

/** What the lane needs that is not there (a Debian package to install), or undefined. */
export function emulationMissing(): string | undefined {
  if (!existsSync(QEMU_AARCH64)) return `${QEMU_AARCH64} is missing (apt-get install qemu-user-static)`;
  if (!existsSync(join(AARCH64_SYSROOT, "lib", "ld-linux-aarch64.so.1"))) return `${AARCH64_SYSROOT} has no aarch64 libc (apt-get install libc6-arm64-cross)`;
  return undefined;
}

function unregister(): void {
  if (existsSync(join(BINFMT, NAME))) writeFileSync(join(BINFMT, NAME), "-1");
}

/**
 * Registers the handler (mounting binfmt_misc if it is not) and returns how to remove it. Root.
 * Throws with the reason when the kernel refuses.
 */
export function registerAarch64Handler(): () => void {
  if (!existsSync(join(BINFMT, "register"))) {
    const mount = Bun.spawnSync(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT], { stderr: "pipe" });
    if (mount.exitCode !== 0) throw new Error(`cannot mount binfmt_misc on ${BINFMT}: ${mount.stderr.toString().trim()}`);
  }
  unregister();
  writeFileSync(join(BINFMT, "register"), `:${NAME}:M::${MAGIC}:${MASK}:${INTERPRETER}:PF`);
  const state = readFileSync(join(BINFMT, NAME), "utf8");
  if (!state.startsWith("enabled")) {
    unregister();
    throw new Error(`binfmt_misc handler ${NAME} is not enabled: ${state.trim()}`);
  }
  return unregister;
}
