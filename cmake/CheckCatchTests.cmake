# cmake -D TEST_EXECUTABLE=... -P CheckCatchTests.cmake: run after each unit-test binary links.
# Catch2 v2's test discovery (CatchAddTests.cmake) takes a binary that crashes while listing its
# tests for one with none (a sanitizer runtime that fails to start then passes CI silently), and
# it splits a test name at ';' into names that match nothing. Both fail the build here instead,
# as does a name starting with '-'.
execute_process(COMMAND "${TEST_EXECUTABLE}" --list-test-names-only
                RESULT_VARIABLE result OUTPUT_VARIABLE names ERROR_VARIABLE errors)
# Catch2 v2 exits with the number of tests listed (modulo 256); a signal is a string here.
if(NOT result MATCHES "^[0-9]+$" OR names STREQUAL "")
  message(FATAL_ERROR "${TEST_EXECUTABLE} did not list its tests (result: ${result})\n${errors}")
endif()
string(REGEX MATCHALL "[^\n]*;[^\n]*" split_names "${names}")
if(split_names)
  message(FATAL_ERROR "${TEST_EXECUTABLE}: test names must not contain ';' (ctest would run each "
                      "half as a filter matching nothing): ${split_names}")
endif()
# A name starting with '-' reaches the binary as an option, not a filter (its test never runs).
string(REGEX MATCHALL "(^|\n)-[^\n]*" dash_names "${names}")
if(dash_names)
  message(FATAL_ERROR "${TEST_EXECUTABLE}: test names must not start with '-' (the test binary "
                      "reads them as options): ${dash_names}")
endif()
