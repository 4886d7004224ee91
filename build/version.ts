/** Build-time constants; `CNI_BUILD_VERSION` is replaced by `bun build --define`. */
declare const CNI_BUILD_VERSION: string | undefined;

/** The version string shown in about text (upstream prints "version unknown" when unset). */
export function buildVersion(): string {
  return typeof CNI_BUILD_VERSION === "string" && CNI_BUILD_VERSION !== "" ? CNI_BUILD_VERSION : "version unknown";
}
