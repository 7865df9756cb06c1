// The Catch2 runner of the preflight tests (one translation unit holds Catch's main).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
