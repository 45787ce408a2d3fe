#include "ptrun/rendezvous/file_store.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "file_log.hpp"
#include "store_conformance.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;
using namespace std::chrono_literals;

namespace {

/// A private directory holding the store's file, removed at scope exit.
struct StoreDir {
    std::filesystem::path path;
    StoreDir() {
        std::string pattern = std::filesystem::temp_directory_path() / "ptrun-filestore-XXXXXX";
        path = ::mkdtemp(pattern.data());
    }
    ~StoreDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file() const { return (path / "rdzv").string(); }
    FileStoreOptions options() const { return FileStoreOptions{file(), 100ms}; }
};

}  // namespace

TEST_CASE("FileStore implements every verb", "[rdzv][file]") {
    StoreDir dir;
    FileStore s(dir.options());
    check_store_verbs(s);
}

TEST_CASE("FileStore wakes a blocked call when another handle writes", "[rdzv][file]") {
    StoreDir dir;
    FileStore s(dir.options());
    FileStore writer(dir.options());
    check_store_blocking(s, writer);
}

TEST_CASE("FileStore pops a queue in batches", "[rdzv][file]") {
    StoreDir dir;
    FileStore s(dir.options());
    check_store_queue_batch(s);
}

TEST_CASE("FileStore interrupt fails one handle's calls, not another's", "[rdzv][file]") {
    StoreDir dir;
    FileStore s(dir.options());
    FileStore other(dir.options());
    check_store_interrupt(s, other);
}

TEST_CASE("FileStore handles agree: 8 threads, each its own handle, through add/wait",
          "[rdzv][file]") {
    StoreDir dir;
    constexpr int kRanks = 8;
    spawn_threads(kRanks, [&](int rank) {
        FileStore s(dir.options());
        s.queue_push("joins", std::to_string(rank));
        if (s.add("arrived", 1) == kRanks) s.set("go", "1");
        s.wait({"go"}, 20s);
    });
    FileStore s(dir.options());
    CHECK(s.get("arrived", 1s) == std::to_string(kRanks));
    CHECK(s.queue_pop_batch("joins", 100, 1s).size() == kRanks);
}

TEST_CASE("FileStore: processes that share the file count through add", "[rdzv][file]") {
    StoreDir dir;
    constexpr int kProcesses = 4;
    constexpr int kAdds = 50;
    std::vector<pid_t> pids;
    for (int p = 0; p < kProcesses; ++p) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int code = 0;
            try {
                FileStore s(dir.options());
                for (int i = 0; i < kAdds; ++i) s.add("counter", 1);
            } catch (...) {
                code = 1;
            }
            ::_exit(code);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    FileStore s(dir.options());
    CHECK(s.add("counter", 0) == kProcesses * kAdds);
}

TEST_CASE("FileStore rewrites a long log and the other handles follow", "[rdzv][file]") {
    StoreDir dir;
    FileStore writer(dir.options());
    FileStore reader(dir.options());
    writer.set("kept", "yes");
    reader.queue_push("q", "first");
    const std::string big(100 * 1024, 'x');
    for (int i = 0; i < 60; ++i) writer.set("churn", big + std::to_string(i));  // 6 MB of log
    CHECK(std::filesystem::file_size(dir.file()) < 2u * 1024 * 1024);           // rewritten
    CHECK(reader.get("churn", 1s) == big + "59");
    CHECK(reader.get("kept", 1s) == "yes");
    CHECK(writer.queue_pop("q", 1s) == "first");
    CHECK(reader.queue_len("q") == 0);
    CHECK(reader.delete_prefix("ch") == 1);
    CHECK_FALSE(writer.check({"churn"}));
}

TEST_CASE("FileStore drops a record torn by a writer that died", "[rdzv][file]") {
    StoreDir dir;
    {
        FileStore s(dir.options());
        s.set("whole", "1");
    }
    {
        std::ofstream f(dir.file(), std::ios::app | std::ios::binary);
        const auto rec =
            ptrun::rdzv::detail::FileLog::record(ptrun::rdzv::detail::FileOp::Set, "torn", "value");
        f << rec.substr(0, rec.size() - 2);
    }
    FileStore s(dir.options());
    CHECK(s.get("whole", 1s) == "1");
    CHECK_FALSE(s.check({"torn"}));
    s.set("after", "2");
    FileStore t(dir.options());
    CHECK(t.get("after", 1s) == "2");
}

TEST_CASE("FileStore refuses a file some other program wrote, naming it", "[rdzv][file]") {
    StoreDir dir;
    {
        std::ofstream f(dir.file(), std::ios::binary);
        f << "this is a notebook, not a rendezvous\n";
    }
    try {
        FileStore s(dir.options());
        FAIL("opened a foreign file");
    } catch (const StoreError& e) {
        CHECK_THAT(e.what(), Catch::Contains(dir.file()) && Catch::Contains("not a ptrun"));
    }
}

TEST_CASE("FileStore names a path it cannot open", "[rdzv][file]") {
    StoreDir dir;
    FileStoreOptions o{(dir.path / "no-such-dir" / "rdzv").string(), 100ms};
    CHECK_THROWS_WITH(FileStore(o), Catch::Contains("no-such-dir") &&
                                        Catch::Contains("directory every node shares"));
}
