/**
 * The public face of shared/undo/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { teardown, TeardownError, Undo } from "./teardown.ts";
export type { TeardownStep } from "./teardown.ts";
