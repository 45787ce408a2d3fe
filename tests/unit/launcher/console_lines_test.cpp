#include <catch2/catch.hpp>
#include <string>

#include "ptrun/launcher/output/output_relay.hpp"

using namespace ptrun::launcher;

namespace {

std::string feed_all(ConsoleLines& lines, const std::string& text, std::size_t chunk = 1 << 20) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); i += chunk) {
        lines.feed(text.data() + i, std::min(chunk, text.size() - i), out);
    }
    return out;
}

}  // namespace

TEST_CASE("console lines: whole lines are prefixed, a partial one waits", "[launcher][relay]") {
    ConsoleLines lines("[h:0] ");
    CHECK(feed_all(lines, "a\nbc\n\nde") == "[h:0] a\n[h:0] bc\n[h:0] \n");
    std::string out;
    lines.feed("f\n", 2, out);
    CHECK(out == "[h:0] def\n");
    out.clear();
    lines.feed("tail", 4, out);
    lines.finish(out);
    CHECK(out == "[h:0] tail\n");
}

TEST_CASE("console lines: carriage returns end console lines (progress bars)",
          "[launcher][relay]") {
    for (std::size_t chunk : {1u, 3u, 100u}) {
        ConsoleLines lines("[h:1] ");
        CHECK(feed_all(lines, "\r 10%\r 50%\r100%\n", chunk) ==
              "\r[h:1]  10%\r[h:1]  50%\r[h:1] 100%\n");
        ConsoleLines crlf("[h:1] ");
        CHECK(feed_all(crlf, "one\r\ntwo\r\n", chunk) == "[h:1] one\r\n[h:1] two\r\n");
    }
}

TEST_CASE("console lines: a long line is passed on in pieces, memory stays bounded",
          "[launcher][relay]") {
    ConsoleLines lines("[p] ", 8);
    CHECK(feed_all(lines, std::string(20, 'x') + "\n", 3) ==
          "[p] xxxxxxxx\n[p] xxxxxxxx\n[p] xxxx\n");
    ConsoleLines exact("[p] ", 4);
    CHECK(feed_all(exact, "abcd\nef\n", 1) == "[p] abcd\n[p] ef\n");  // no empty line after a piece
    ConsoleLines big("[p] ");
    std::string out;
    std::string chunk(1 << 20, 'y');  // 16 MiB without a newline, 1 MiB at a time
    std::size_t emitted = 0;
    for (int i = 0; i < 16; ++i) {
        big.feed(chunk.data(), chunk.size(), out);
        emitted += out.size();
        out.clear();
    }
    CHECK(emitted >= 16u * (1 << 20) - kMaxConsoleLine);
}
