#!/bin/sh
# The interpreter the arm64 lane registers with binfmt_misc for aarch64 ELF executables
# (test/harness/aarch64-emulation.ts): qemu-user with a Cortex-A53 CPU model, ARMv8.0-A (Raspberry
# Pi 3; the Pi 4's and Graviton 1's Cortex-A72 is ARMv8.0-A too), so an instruction the build needs
# beyond ARMv8.0 (LSE atomics, say) fails with SIGILL instead of running. Dynamic
# executables find their loader and libc in Debian's cross libc (libc6-arm64-cross).
# binfmt_misc flag P: $1 is the executable's path, $2 the argv[0] its caller gave (the plugin name
# a shim passes to the multi-call executable), then the arguments.
file=$1 argv0=$2
shift 2
exec /usr/bin/qemu-aarch64-static -cpu cortex-a53 -L /usr/aarch64-linux-gnu -0 "$argv0" "$file" "$@"
