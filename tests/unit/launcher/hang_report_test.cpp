#include "ptrun/launcher/output/hang_report.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;

TEST_CASE("the hang report names the first to stop, the others, where and what follows",
          "[launcher][hang]") {
    HangReport r;
    r.host = "node3";
    r.first = 1;
    r.ranks = {
        {8, 0, 100, true, "no progress for 31 s (40 beats)", 40, 31.0, std::nullopt},
        {9, 1, 101, true, "stopped by SIGSTOP for 31 s (39 beats)", 39, 31.2, std::string("ckpt")},
        {10, 2, 102, false, "", 0, std::nullopt, std::nullopt},
    };
    r.where = "rank 9 in `nanosleep`; ranks 8,10 in `allreduce`";
    r.stacks_dir = "/logs/run/attempt_0";
    r.notes = {"no native stacks: neither eu-stack (elfutils) nor gdb is on PATH"};
    r.outcome = "the job ends with exit code 124 (hung)";
    const std::string rule(72, '=');
    CHECK(format_hang_report(r) ==
          rule +
              "\nptrun: hung worker on node3\n"
              "  first to stop: rank 9 (local rank 1, pid 101): stopped by SIGSTOP for 31 s "
              "(39 beats)\n"
              "  also hung    : rank 8 (local rank 0, pid 100): no progress for 31 s (40 "
              "beats)\n"
              "  where        : rank 9 in `nanosleep`; ranks 8,10 in `allreduce`\n"
              "  progress     :\n"
              "    rank 8 (pid 100): 40 beats, the last 31.0 s ago\n"
              "    rank 9 (pid 101): 39 beats, the last 31.2 s ago, in section 'ckpt'\n"
              "    rank 10 (pid 102): never made progress\n"
              "  stacks       : /logs/run/attempt_0/stacks_rank_<RANK>.txt\n"
              "  note         : no native stacks: neither eu-stack (elfutils) nor gdb is on "
              "PATH\n"
              "  outcome      : the job ends with exit code 124 (hung)\n" +
              rule + "\n");
}

TEST_CASE("the hang report names the odd one out and prints its Python stack whole",
          "[launcher][hang]") {
    HangReport r;
    r.host = "node3";
    r.first = 1;
    r.first_why = "the only rank whose stack differs from the others'";
    r.ranks = {
        {8, 0, 100, true, "no progress for 31 s (40 beats)", 40, 31.0, std::nullopt},
        {9, 1, 101, true, "no progress for 31 s (40 beats)", 40, 31.1, std::nullopt},
    };
    r.first_python_stack =
        "Current thread 0x1 (most recent call first):\n  File \"/w/t.py\", line 5 in stuck\x1b\n";
    const auto text = format_hang_report(r);
    CHECK_THAT(text, Catch::Contains("  odd one out  : rank 9 (local rank 1, pid 101): no progress "
                                     "for 31 s (40 beats); the only rank whose stack differs from "
                                     "the others'\n"));
    CHECK_THAT(text, Catch::Contains("  also hung    : rank 8 (local rank 0, pid 100)"));
    CHECK_THAT(text,
               Catch::Contains("  rank 9's Python stack:\n    Current thread 0x1 (most recent "
                               "call first):\n      File \"/w/t.py\", line 5 in stuck\\e\n"));
    r.ranks[1].hung = false;  // named by its stack alone
    r.ranks[1].what.clear();
    CHECK_THAT(format_hang_report(r),
               Catch::Contains("  odd one out  : rank 9 (local rank 1, pid 101): the only rank"));
}
