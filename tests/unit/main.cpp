// The Catch2 runner for the unit tests (one translation unit holds Catch's main).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
