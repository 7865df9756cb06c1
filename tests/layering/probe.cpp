// A translation unit that includes one header its target must not see (CMakeLists.txt).
#include PROBE_HEADER
