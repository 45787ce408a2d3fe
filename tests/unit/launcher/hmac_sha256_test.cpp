#include "ptrun/launcher/membership/hmac_sha256.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace ptrun::launcher;

namespace {

std::string bytes(std::size_t n, unsigned char b) { return std::string(n, static_cast<char>(b)); }

}  // namespace

TEST_CASE("hmac_sha256 matches RFC 4231 test cases 1 to 7", "[launcher][auth]") {
    std::string key4;
    for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i);
    CHECK(to_hex(hmac_sha256(bytes(20, 0x0b), "Hi There")) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(to_hex(hmac_sha256(bytes(20, 0xaa), bytes(50, 0xdd))) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    CHECK(to_hex(hmac_sha256(key4, bytes(50, 0xcd))) ==
          "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    CHECK(to_hex(hmac_sha256(bytes(20, 0x0c), "Test With Truncation")).substr(0, 32) ==
          "a3b6167473100ee06e0c796c2955552b");
    CHECK(to_hex(hmac_sha256(bytes(131, 0xaa),
                             "Test Using Larger Than Block-Size Key - Hash Key First")) ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CHECK(to_hex(hmac_sha256(bytes(131, 0xaa),
                             "This is a test using a larger than block-size key and a larger than "
                             "block-size data. The key needs to be hashed before being used by the "
                             "HMAC algorithm.")) ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("equal_constant_time compares contents and lengths", "[launcher][auth]") {
    CHECK(equal_constant_time("abc", "abc"));
    CHECK_FALSE(equal_constant_time("abc", "abd"));
    CHECK_FALSE(equal_constant_time("abc", "ab"));
    CHECK(equal_constant_time("", ""));
}

TEST_CASE("sha256 matches FIPS 180-4's examples, fed whole or in pieces", "[launcher][auth]") {
    CHECK(to_hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(to_hex(sha256("abc")) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK(to_hex(sha256(two_blocks)) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const std::string million(1'000'000, 'a');
    CHECK(to_hex(sha256(million)) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // Every split of a message across two update() calls, and one byte at a time.
    const std::string text = two_blocks + two_blocks + "tail";
    const auto whole = sha256(text);
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        Sha256 h;
        h.update(std::string_view(text).substr(0, cut));
        h.update(std::string_view(text).substr(cut));
        CHECK(h.digest() == whole);
    }
    Sha256 bytewise;
    for (char c : text) bytewise.update(std::string_view(&c, 1));
    CHECK(bytewise.digest() == whole);
    // 55, 56 and 64 bytes: the padding's edges.
    CHECK(to_hex(sha256(std::string(55, 'a'))) ==
          "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    CHECK(to_hex(sha256(std::string(56, 'a'))) ==
          "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    CHECK(to_hex(sha256(std::string(64, 'a'))) ==
          "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}
