// The source of ptrun_unit_pch (tests/CMakeLists.txt, PTRUN_PCH): nothing of its own; the target
// exists to build the precompiled <catch2/catch.hpp> that every unit-test binary reuses.
