/**
 * Opening CNI_NETNS for a handler, with the errors mapped to CNI codes: a path that does not exist
 * or is not a network namespace is code 8 (upstream reports both as 999). DEL uses
 * {@link openNetnsForDel}, which treats a missing namespace as "already gone".
 */
import { NetNS } from "../netns/netns.ts";
import { NetnsNotFoundError, NotANetnsError } from "../netns/errors.ts";
import { InvalidNetnsError } from "./errors.ts";

/** Opens the container's netns for ADD/CHECK; failures are code 8 naming the path. */
export function openContainerNetns(path: string): NetNS {
  try {
    return NetNS.open(path);
  } catch (err) {
    if (err instanceof NetnsNotFoundError || err instanceof NotANetnsError) {
      throw new InvalidNetnsError(`failed to open netns ${JSON.stringify(path)}: ${err.message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * Opens the container's netns for DEL: undefined when CNI_NETNS is unset or the namespace is gone
 * (the DEL then only cleans up host-side state); a path that is not a netns is still an error.
 */
export function openNetnsForDel(path: string): NetNS | undefined {
  if (path === "") return undefined;
  try {
    return NetNS.open(path);
  } catch (err) {
    if (err instanceof NetnsNotFoundError) return undefined;
    if (err instanceof NotANetnsError) {
      throw new InvalidNetnsError(`failed to open netns ${JSON.stringify(path)}: ${err.message}`, { cause: err });
    }
    throw err;
  }
}
