/**
 * The CNI_* environment table (cni v1.3.0 `pkg/skel` getCmdArgsFromEnv, `pkg/utils`): which variables
 * each command requires, in which order they are checked, and how container IDs and interface names
 * are validated. Errors keep upstream's wording and codes; interface names are also refused where
 * the kernel would not create them as given (DIFFERENCES.md).
 */
import { InvalidEnvError, UnknownContainerError } from "./errors.ts";

/** Variables in the order upstream walks them (the order of the "missing" list). */
export const ENV_ORDER = [
  "CNI_COMMAND",
  "CNI_CONTAINERID",
  "CNI_NETNS",
  "CNI_IFNAME",
  "CNI_ARGS",
  "CNI_PATH",
  "CNI_NETNS_OVERRIDE",
] as const;
export type EnvName = (typeof ENV_ORDER)[number];

/** Which commands require each variable (CNI_COMMAND is always required). */
const REQUIRED_FOR: Record<EnvName, readonly string[]> = {
  CNI_COMMAND: [],
  CNI_CONTAINERID: ["ADD", "CHECK", "DEL"],
  CNI_NETNS: ["ADD", "CHECK"],
  CNI_IFNAME: ["ADD", "CHECK", "DEL"],
  CNI_ARGS: [],
  CNI_PATH: ["ADD", "CHECK", "DEL", "GC", "STATUS"],
  CNI_NETNS_OVERRIDE: [],
};

const VALIDATORS: Partial<Record<EnvName, (value: string) => void>> = {
  CNI_CONTAINERID: validateContainerID,
  CNI_IFNAME: validateInterfaceName,
};

/** Same pattern upstream uses for container IDs and network names. */
export const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** `ValidateContainerID`: empty → code 3, bad characters → code 4 with the ID as details. */
export function validateContainerID(id: string): void {
  if (id === "") throw new UnknownContainerError("missing containerID");
  if (!ID_PATTERN.test(id)) throw new InvalidEnvError("invalid characters in containerID", { details: id });
}

/** Unicode white space as Go's `unicode.IsSpace` sees it. */
const GO_SPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u;

/**
 * Names upstream's ValidateInterfaceName allows that the kernel will not create as given: with a
 * `%` the kernel picks the name itself (`eth%d` becomes `eth0`, net/core/dev.c dev_alloc_name) or
 * refuses it; `all` and `default` are the names of the per-family entries in /proc/sys/net/ipv4/conf,
 * which the kernel refuses as link names (EINVAL). A plugin that created a link under such a name
 * would look it up by a name it does not have.
 */
function kernelRefusal(name: string): string | undefined {
  if (name.includes("%")) return "interface name contains %, which the kernel replaces with a number";
  if (name === "all" || name === "default") return `interface name ${JSON.stringify(name)} is reserved by the kernel`;
  return undefined;
}

/**
 * `ValidateInterfaceName`: 1..15 bytes, not `.`/`..`, no `/`, `:` or white space; then
 * {@link kernelRefusal}; code 4.
 */
export function validateInterfaceName(name: string): void {
  if (name === "") throw new InvalidEnvError("interface name is empty");
  if (Buffer.byteLength(name, "utf8") > 15) {
    throw new InvalidEnvError("interface name is too long", { details: "interface name should be less than 16 characters" });
  }
  if (name === "." || name === "..") throw new InvalidEnvError("interface name is . or ..");
  if (name.includes("/") || name.includes(":") || GO_SPACE.test(name)) {
    throw new InvalidEnvError("interface name contains / or : or whitespace characters");
  }
  const refusal = kernelRefusal(name);
  if (refusal !== undefined) throw new InvalidEnvError(refusal, { details: name });
}

export interface CniEnv {
  command: string;
  containerID: string;
  netns: string;
  ifName: string;
  args: string;
  path: string;
  netnsOverride: string;
}

/**
 * Reads and validates the CNI_* variables for the command named by CNI_COMMAND. A required variable
 * that fails validation is reported at once (even if earlier ones were missing), as upstream does;
 * otherwise all missing ones are listed: `required env variables [CNI_NETNS,CNI_PATH] missing`.
 */
export function readCniEnv(env: Readonly<Record<string, string | undefined>>): CniEnv {
  const command = env.CNI_COMMAND ?? "";
  const missing: string[] = [];
  for (const name of ENV_ORDER) {
    const value = env[name] ?? "";
    const required = name === "CNI_COMMAND" || REQUIRED_FOR[name].includes(command);
    if (value === "") {
      if (required) missing.push(name);
      continue;
    }
    if (required) VALIDATORS[name]?.(value);
  }
  if (missing.length > 0) throw new InvalidEnvError(`required env variables [${missing.join(",")}] missing`);
  return {
    command,
    containerID: env.CNI_CONTAINERID ?? "",
    netns: env.CNI_NETNS ?? "",
    ifName: env.CNI_IFNAME ?? "",
    args: env.CNI_ARGS ?? "",
    path: env.CNI_PATH ?? "",
    netnsOverride: env.CNI_NETNS_OVERRIDE ?? "",
  };
}
