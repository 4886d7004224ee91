/**
 * Errors raised when a network-namespace path cannot be used, with upstream's wording
 * (`pkg/ns` `IsNSorErr` / `GetNS`). DEL paths treat {@link NetnsNotFoundError} as "already gone".
 */

/** Base class: a netns path could not be opened or checked. */
export class NetnsError extends Error {
  override name = "NetnsError";
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.path = path;
  }
}

/** The path does not exist: `failed to Statfs "<p>": no such file or directory`. */
export class NetnsNotFoundError extends NetnsError {
  override name = "NetnsNotFoundError";
}

/** The path exists but is not on nsfs or procfs: `unknown FS magic on "<p>": <hex>`. */
export class NotANetnsError extends NetnsError {
  override name = "NotANetnsError";
  /** The filesystem magic that was found. */
  readonly magic: number;
  constructor(path: string, magic: number) {
    super(path, `unknown FS magic on ${JSON.stringify(path)}: ${magic.toString(16)}`);
    this.magic = magic;
  }
}
