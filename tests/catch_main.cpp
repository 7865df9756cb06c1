// Catch2's runner (its main and the framework's implementation), compiled once for every Catch2
// test program: compiled into each one, it cost 30 s of CPU per program (tests/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
