// c_array and env_block: the argv and envp that ptrun hands execve.
#include "ptrun/sys/c_array.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

using namespace ptrun::sys;

TEST_CASE("c_array points at each string and ends with NULL", "[sys]") {
    const std::vector<std::string> args{"train", "--lr", "0.1"};
    const auto argv = c_array(args);
    REQUIRE(argv.size() == 4);
    CHECK(std::string(argv[0]) == "train");
    CHECK(argv[2] == args[2].c_str());
    CHECK(argv[3] == nullptr);
}

TEST_CASE("env_block spells NAME=value for each variable, in the map's order", "[sys]") {
    std::map<std::string, std::string> vars{
        {"RANK", "3"}, {"EMPTY", ""}, {"LONG", std::string(300, 'x')}, {"A", "b=c"}};
    const auto env = env_block(vars);
    REQUIRE(env.pointers.size() == 5);
    CHECK(std::string(env.pointers[0]) == "A=b=c");
    CHECK(std::string(env.pointers[1]) == "EMPTY=");
    CHECK(std::string(env.pointers[2]) == "LONG=" + std::string(300, 'x'));
    CHECK(std::string(env.pointers[3]) == "RANK=3");
    CHECK(env.pointers[4] == nullptr);
    CHECK(env_block(std::map<std::string, std::string>{}).pointers == std::vector<char*>{nullptr});
}
