/**
 * Test helper for the concurrency test: one host-local ADD in its own process, like a runtime
 * invocation. Usage: `bun test/harness/host-local-add-worker.ts <config-json> <containerID>`; prints the Result as JSON.
 */
import type { CmdArgs } from "../../shared/cni/types.ts";
import { hostLocalPlugin } from "../../ipam/host-local/host-local.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

const [conf, id] = process.argv.slice(2) as [string, string];
const config = JSON.parse(conf) as Record<string, unknown>;
const args: CmdArgs = withDelegate({
  command: "ADD",
  containerID: id,
  netns: "/proc/self/ns/net",
  ifName: "eth0",
  args: "",
  path: "",
  stdinData: new TextEncoder().encode(conf),
  config,
  cniVersion: String(config["cniVersion"]),
  env: {},
  stderr: (text) => process.stderr.write(text),
  scope: PROCESS_SCOPE,
});
console.log(JSON.stringify(await hostLocalPlugin.add(args)));
