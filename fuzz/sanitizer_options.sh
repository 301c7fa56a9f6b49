# Sourced by fuzz/run.sh and fuzz/triage.sh: sanitizer options for the harnesses, in front of
# whatever the caller set. An allocation over 2 GiB is an ASan report with the allocating stack
# (libFuzzer's own out-of-memory report has none); UBSan prints the stack of its report.
export ASAN_OPTIONS="max_allocation_size_mb=2048:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
