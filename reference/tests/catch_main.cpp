// The one Catch2 v2 main for every test binary of the project.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
