// Keeping tracing across exec: a program that execs with a scrubbed environment (env -i,
// a launcher that rebuilds LD_PRELOAD) would leave the shim behind. Before each exec the
// environment is checked and, if needed, a copy with our variables put back is built on the
// caller's stack (no malloc: this also runs in vfork children).
#pragma once

namespace rdzv {

// Remembers the shim's path and the RDZVSCOPE_* settings; called from the constructor.
void env_inject_init();

// Upper bound of entries the rebuilt environment may need beyond the original.
constexpr int kInjectedVars = 6;

// Counts entries of envp (-1 when too many to copy).
long env_count(char* const* envp);

// Writes into out (room for count + kInjectedVars + 1 pointers) and text (kInjectTextSize
// bytes) the environment to exec with. Returns envp itself when nothing is missing or when
// tracing is off (RDZVSCOPE_DIR="" in envp disables it on purpose).
constexpr unsigned long kInjectTextSize = 8192;
char* const* env_for_exec(char* const* envp, long count, char** out, char* text);

}  // namespace rdzv
