#include "ptrun/watchdog/stacks.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptrun/watchdog/stack_summary.hpp"

using namespace ptrun::watchdog;

namespace {

// eu-stack -p 4242 -m -s of a ptrun::ddp worker blocked in an allreduce, and its second thread.
const char* kEuStack =
    "PID 4242 - process\n"
    "TID 4242:\n"
    "#0  0x00007f861e08c503 syscall - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "    ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38:0\n"
    "#1  0x000055d0a1b2c3d4 ptrun::ddp::detail::ShmSync::wait_for(unsigned long, "
    "ptrun::ddp::detail::CallTimer const&) - /opt/train\n"
    "    /src/ddp/src/shm_sync.cpp:120:9\n"
    "#2  0x000055d0a1b2c500 ptrun::ddp::detail::ShmCollectives::allreduce(void*, unsigned long, "
    "ptrun::ddp::DType, ptrun::ddp::ReduceOp, int, ptrun::ddp::detail::CallTimer const&, "
    "std::function<void (void*, unsigned long)> const*, unsigned long) - /opt/train\n"
    "    /src/ddp/src/shm_collectives.cpp:210:5\n"
    "#3  0x000055d0a1b2c600 - /opt/train\n"
    "#4  0x00007f861dfe424a __libc_start_call_main - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "TID 4243:\n"
    "#0  0x00007f861e08c503 __futex_abstimed_wait_common - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "#1  0x00007f861e08c600 std::condition_variable::wait(std::unique_lock<std::mutex>&) - "
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6\n";

// gdb -batch -p 77 "thread apply all bt" of a native worker blocked in its data loader.
const char* kGdb =
    "[Thread debugging using libthread_db enabled]\n"
    "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
    "0x00007f7a4b3efbd3 in __GI___clock_nanosleep (...) at "
    "../sysdeps/unix/sysv/linux/clock_nanosleep.c:71\n"
    "\n"
    "Thread 2 (Thread 0x7f7a4a000640 (LWP 78) \"train\"):\n"
    "#0  0x00007f7a4b3efbd3 in __GI___poll (fds=..., nfds=..., timeout=...) at "
    "../sysdeps/unix/sysv/linux/poll.c:29\n"
    "#1  0x000055b0a7f6d3f2 in ?? ()\n"
    "\n"
    "Thread 1 (Thread 0x7f7a4b319740 (LWP 77) \"train\"):\n"
    "#0  __GI___clock_nanosleep (clock_id=..., flags=..., req=..., rem=...) at "
    "../sysdeps/unix/sysv/linux/clock_nanosleep.c:71\n"
    "#1  0x00007f861e090e53 in __GI___nanosleep (req=..., rem=...) at "
    "../sysdeps/unix/sysv/linux/nanosleep.c:25\n"
    "#2  0x000055b0a7f6eaba in loader::Batches::next (this=...) at /src/loader.cpp:88\n"
    "#3  0x000055b0a7f5a1ea in main () at /src/main.cpp:12\n"
    "#4  0x00007f7a4b2b424a in __libc_start_call_main () from "
    "/lib/x86_64-linux-gnu/libc.so.6\n"
    "[Inferior 1 (process 77) detached]\n";

// Python 3.11 / 3.13 faulthandler after SIGABRT, with other output around it.
const char* kFaulthandler = R"(epoch 3 step 10 loss 0.25
Fatal Python error: Aborted

Thread 0x00007f2bc4a086c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 975 in run

Current thread 0x00007f2bc4cc32c0 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 415 in select
  File "/usr/lib/python3.11/multiprocessing/connection.py", line 930 in wait
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1133 in _try_get_data
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1295 in __next__
  File "/work/train.py", line 42 in main
  File "/work/train.py", line 60 in <module>

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
)";

RankStacks python_rank(int rank, const std::string& text) {
    RankStacks r;
    r.rank = rank;
    r.python = parse_python_faulthandler(text);
    r.python_text = text;
    return r;
}

std::string allreduce_dump(int line) {
    std::ostringstream s;
    s << "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
      << "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line "
      << line << " in all_reduce\n  File \"/work/train.py\", line 50 in main\n";
    return s.str();
}

}  // namespace

TEST_CASE("eu-stack output parses into threads and frames", "[watchdog][stacks]") {
    const auto threads = parse_eu_stack(kEuStack, 4242);
    REQUIRE(threads.size() == 2);
    CHECK(threads[0].name == "TID 4242");
    CHECK(threads[0].main);
    CHECK_FALSE(threads[1].main);
    REQUIRE(threads[0].frames.size() == 5);
    CHECK(threads[0].frames[0] == Frame{"syscall", "../sysdeps/unix/sysv/linux/x86_64/syscall.S",
                                        38, "/usr/lib/x86_64-linux-gnu/libc.so.6"});
    CHECK(threads[0].frames[1].function.rfind("ptrun::ddp::detail::ShmSync::wait_for(", 0) == 0);
    CHECK(threads[0].frames[1].file == "/src/ddp/src/shm_sync.cpp");
    CHECK(threads[0].frames[1].line == 120);
    CHECK(threads[0].frames[3] == Frame{"", "", 0, "/opt/train"});
}

TEST_CASE("gdb backtraces parse into threads and frames", "[watchdog][stacks]") {
    const auto threads = parse_gdb_backtrace(kGdb, 77);
    REQUIRE(threads.size() == 2);
    CHECK(threads[0].name == "Thread 2 (LWP 78)");
    CHECK_FALSE(threads[0].main);
    CHECK(threads[1].main);
    REQUIRE(threads[1].frames.size() == 5);
    CHECK(threads[1].frames[0] ==
          Frame{"__GI___clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 71, ""});
    CHECK(threads[1].frames[2] == Frame{"loader::Batches::next", "/src/loader.cpp", 88, ""});
    CHECK(threads[1].frames[4] ==
          Frame{"__libc_start_call_main", "", 0, "/lib/x86_64-linux-gnu/libc.so.6"});
    CHECK(threads[0].frames[1] == Frame{});  // ?? ()
}

TEST_CASE("the last faulthandler dump is found among other output", "[watchdog][stacks]") {
    const std::string twice = std::string(kFaulthandler) + "restarted\n" + allreduce_dump(7);
    for (const std::string& text : {std::string(kFaulthandler), twice}) {
        const auto threads = parse_python_faulthandler(text);
        REQUIRE(threads.size() == (text == twice ? 1u : 2u));
        const auto& current = threads.back();
        CHECK(current.main);
        CHECK(current.name.rfind("Current thread 0x", 0) == 0);
    }
    const auto threads = parse_python_faulthandler(kFaulthandler);
    CHECK(threads[0].name == "Thread 0x00007f2bc4a086c0");
    REQUIRE(threads[1].frames.size() == 6);
    CHECK(threads[1].frames[0] == Frame{"select", "/usr/lib/python3.11/selectors.py", 415, ""});
    CHECK(threads[1].frames[5] == Frame{"<module>", "/work/train.py", 60, ""});
    CHECK(parse_python_faulthandler("no dump here\n").empty());
}

TEST_CASE("a rank's place skips the runtime and prefers collectives and Python",
          "[watchdog][stacks]") {
    RankStacks native;
    native.native = parse_eu_stack(kEuStack, 4242);
    CHECK(describe_place(place_of(native)) ==
          "`ShmCollectives::allreduce` (shm_collectives.cpp:210)");
    RankStacks gdb;
    gdb.native = parse_gdb_backtrace(kGdb, 77);
    CHECK(describe_place(place_of(gdb)) == "`Batches::next` (loader.cpp:88)");
    // Python's standard library is skipped; torch is not.
    const RankStacks py = python_rank(0, kFaulthandler);
    CHECK(describe_place(place_of(py)) == "`_try_get_data` (dataloader.py:1133)");
    // Only the runtime: the innermost frame.
    RankStacks runtime;
    runtime.native = {ThreadStack{"TID 1", true, {Frame{"__poll", "", 0, "/lib/libc.so.6"}}}};
    CHECK(describe_place(place_of(runtime)) == "`__poll`");
    RankStacks anonymous;
    anonymous.native = {ThreadStack{"TID 1", true, {Frame{"", "", 0, "/opt/bin/worker"}}}};
    CHECK(describe_place(place_of(anonymous)) == "an unnamed function in worker");
    // A Python script's top level is named as Python names it (was an empty name).
    RankStacks top;
    top.python = {ThreadStack{"Current thread", true, {Frame{"<module>", "/w/train.py", 13, ""}}}};
    CHECK(describe_place(place_of(top)) == "`<module>` (train.py:13)");
    CHECK(place_of(RankStacks{}) == nullptr);
    CHECK(describe_place(nullptr) == "an unknown place");
}

TEST_CASE("the summary puts the odd one out first", "[watchdog][stacks]") {
    std::vector<RankStacks> ranks = {
        python_rank(0, allreduce_dump(1536)), python_rank(1, allreduce_dump(1536)),
        python_rank(2, allreduce_dump(1536)), python_rank(3, kFaulthandler)};
    // Python speaks in the user's code: its innermost frame there, and the call it is blocked in.
    CHECK(summarise_stacks(ranks) ==
          "rank 3 in `__next__` <- `main` (train.py:42); "
          "ranks 0-2 in `all_reduce` <- `main` (train.py:50)");
    ranks.push_back(RankStacks{.rank = 5, .note = "eu-stack timed out"});
    CHECK(summarise_stacks(ranks) ==
          "rank 3 in `__next__` <- `main` (train.py:42); "
          "ranks 0-2 in `all_reduce` <- `main` (train.py:50); rank 5: no stack");
    CHECK(
        summarise_stacks({python_rank(4, allreduce_dump(9)), python_rank(7, allreduce_dump(9))}) ==
        "ranks 4,7 in `all_reduce` <- `main` (train.py:50)");
    CHECK(summarise_stacks({}).empty());
}

TEST_CASE("format_ranks compresses runs", "[watchdog][stacks]") {
    CHECK(format_ranks({5, 0, 1, 2, 7, 8, 2}) == "0-2,5,7-8");
    CHECK(format_ranks({3}) == "3");
    CHECK(format_ranks({}).empty());
}

TEST_CASE("write_stacks writes one file per rank with both texts", "[watchdog][stacks]") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("ptrun-stacks-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    RankStacks r = python_rank(3, kFaulthandler);
    r.local_rank = 1;
    r.pid = 4242;
    r.native_text = kEuStack;
    r.note = "gdb not needed";
    const auto paths = write_stacks(dir.string(), {r});
    REQUIRE(paths.size() == 1);
    CHECK(paths[0] == (dir / "stacks_rank_3.txt").string());
    std::ifstream f(paths[0]);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Catch::StartsWith("rank 3 (local rank 1, pid 4242)\nnote: gdb not needed\n"));
    CHECK_THAT(text, Catch::Contains("== Python (faulthandler)\nepoch 3") &&
                         Catch::Contains("== native\nPID 4242"));
    std::filesystem::remove_all(dir);
    CHECK_THROWS_WITH(write_stacks((dir / "missing").string(), {r}),
                      Catch::Contains("cannot write"));
}

TEST_CASE("a rank stuck in the user's own function is named by it", "[watchdog][stacks]") {
    RankStacks own;
    own.python = {ThreadStack{
        "Current thread",
        true,
        {Frame{"stuck_in_loader", "/w/train.py", 61, ""}, Frame{"main", "/w/train.py", 80, ""}}}};
    CHECK(place_text(own) == "`stuck_in_loader` (train.py:61)");
    // Only library frames: the innermost outside the standard library, as before.
    RankStacks library;
    library.python = {ThreadStack{
        "Current thread",
        true,
        {Frame{"select", "/usr/lib/python3.11/selectors.py", 415, ""},
         Frame{"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/c10d.py", 9, ""}}}};
    CHECK(place_text(library) == "`all_reduce` (c10d.py:9)");
    CHECK(place_text(RankStacks{}).empty());
}

TEST_CASE("the odd one out: a place of its own, else the only rank outside a collective",
          "[watchdog][stacks]") {
    RankStacks stuck;
    stuck.rank = 1;
    stuck.python = {
        ThreadStack{"Current thread", true, {Frame{"stuck_in_loader", "/w/train.py", 61, ""}}}};
    std::vector<RankStacks> ranks = {python_rank(0, allreduce_dump(1536)), stuck,
                                     python_rank(2, allreduce_dump(1536)),
                                     python_rank(3, allreduce_dump(1536))};
    auto odd = odd_one_out(ranks);
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    CHECK(odd->why ==
          "the only rank whose stack differs from the others', the only one outside a collective");
    RankStacks idle = stuck;  // the others not in a collective: the difference alone is said
    idle.rank = 7;
    idle.python[0].frames[0] = Frame{"beat_for", "/w/train.py", 35, ""};
    RankStacks idle2 = idle;
    idle2.rank = 8;
    odd = odd_one_out({idle, stuck, idle2});
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    CHECK(odd->why == "the only rank whose stack differs from the others'");
    // Two ranks: places differ, but only one is outside a collective.
    odd = odd_one_out({ranks[0], stuck});
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    CHECK_THAT(odd->why, Catch::Contains("the only rank outside a collective"));
    // All alike, two odd ones, one stack only: nothing singled out.
    CHECK_FALSE(odd_one_out({ranks[0], ranks[2], ranks[3]}));
    RankStacks other = stuck;
    other.rank = 4;
    other.python[0].frames[0].line = 99;
    CHECK_FALSE(odd_one_out({ranks[0], ranks[2], stuck, other}));
    CHECK_FALSE(odd_one_out({stuck}));
    CHECK_FALSE(odd_one_out({}));
}

TEST_CASE("a rank in DDP's backward reduction waits for its peers: the other is named",
          "[watchdog][stacks]") {
    // Issue 35.2: 2 ranks, rank 1 sleeps in its loop, rank 0 waits in DDP's gradient allreduce
    // inside `backward`: no frame names a collective, but c10d::Reducer (native) does the
    // reduction. Rank 0 was blamed as the first to stop.
    RankStacks backward;
    backward.rank = 0;
    backward.python = {ThreadStack{
        "Current thread",
        true,
        {Frame{"backward", "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", 197, ""},
         Frame{"backward", "/usr/lib/python3/dist-packages/torch/_tensor.py", 487, ""},
         Frame{"train", "/w/train.py", 30, ""}}}};
    backward.native = {ThreadStack{
        "TID 10",
        true,
        {Frame{"__futex_abstimed_wait_common", "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
         Frame{"c10::ivalue::Future::wait()", "", 0, "/usr/lib/libc10.so"},
         Frame{"c10d::Reducer::finalize_backward()", "", 0, "/usr/lib/libtorch_cpu.so.1.13"},
         Frame{"torch::autograd::Engine::execute(...)", "", 0, "/usr/lib/libtorch_cpu.so.1.13"}}}};
    RankStacks sleeping;
    sleeping.rank = 1;
    sleeping.python = {
        ThreadStack{"Current thread", true, {Frame{"train", "/w/train.py", 26, ""}}}};
    auto odd = odd_one_out({backward, sleeping});
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    CHECK(odd->why == "the only rank outside a collective while the others wait in one");
    // torch.distributed's own Python code (a barrier, a store wait) is waiting too.
    RankStacks barrier;
    barrier.rank = 0;
    barrier.python = {ThreadStack{
        "Current thread",
        true,
        {Frame{"barrier", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
               3145, ""},
         Frame{"train", "/w/train.py", 31, ""}}}};
    odd = odd_one_out({barrier, sleeping});
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    // Python stacks alone (no eu-stack or gdb): inside torch.autograd's backward is waiting too.
    RankStacks python_only = backward;
    python_only.native.clear();
    odd = odd_one_out({python_only, sleeping});
    REQUIRE(odd);
    CHECK(odd->rank == 1);
    // Both in the user's own code: the stacks single out no rank.
    RankStacks other = sleeping;
    other.rank = 0;
    other.python[0].frames[0].line = 40;
    CHECK_FALSE(odd_one_out({other, sleeping}));
}
