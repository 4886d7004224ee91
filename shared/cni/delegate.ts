/**
 * The {@link Delegate} one invocation carries in its CmdArgs (`args.delegate`). skel makes it for
 * every call, so this file stays small: ./invoke.ts, which finds and runs the other plugin (and
 * loads the result parsers), is loaded on the first delegation only — a call that delegates nothing
 * never loads it.
 */
import type { CmdArgs, Delegate, DelegateInputs, InProcessPlugins } from "./types.ts";

/**
 * `args` with their delegate (CmdArgs.delegate), which runs this build's plugins in-process when
 * `inProcess` is given. skel makes every invocation's CmdArgs with it; so does whoever else builds
 * CmdArgs (the operator's commands, tests).
 */
export function withDelegate(args: Omit<CmdArgs, "delegate">, inProcess?: InProcessPlugins): CmdArgs {
  return { ...args, delegate: delegateFor(args, inProcess) };
}

function delegateFor(inputs: DelegateInputs, inProcess: InProcessPlugins | undefined): Delegate {
  const invoke = () => require("./invoke.ts") as typeof import("./invoke.ts");
  return {
    add: async (type) => invoke().delegateAdd(type, inputs, inProcess),
    run: async (type, command) => {
      await invoke().execDelegate(type, inputs, command, inProcess);
    },
  };
}
