// ptrun's own _dl_find_object (rendezvous/src/dl_find_object.cpp) against glibc's: the same
// unwind table for code of this binary and of libc, -1 where no object is mapped, and exceptions
// thrown through the static libgcc's unwinder, which calls it, are caught.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

using Find = int (*)(void*, dl_find_object*);

// glibc's, which the binary's hidden definition hides from a plain call.
Find glibc_find() { return reinterpret_cast<Find>(dlsym(RTLD_DEFAULT, "_dl_find_object")); }

[[gnu::noinline]] int thrower(int depth) {
    if (depth == 0) throw std::runtime_error("from depth 0");
    return thrower(depth - 1) + 1;
}

}  // namespace

TEST_CASE("dl_find_object: the same unwind table as glibc's", "[glibc_compat]") {
    const Find glibc = glibc_find();
    REQUIRE(glibc != nullptr);
    void* addresses[] = {reinterpret_cast<void*>(&thrower), reinterpret_cast<void*>(&std::getenv),
                         dlsym(RTLD_DEFAULT, "printf")};
    for (void* pc : addresses) {
        INFO(pc);
        dl_find_object ours{};
        dl_find_object theirs{};
        REQUIRE(_dl_find_object(pc, &ours) == 0);
        REQUIRE(glibc(pc, &theirs) == 0);
        CHECK(ours.dlfo_eh_frame == theirs.dlfo_eh_frame);
        CHECK(ours.dlfo_eh_frame != nullptr);
        CHECK(ours.dlfo_map_start <= pc);
        CHECK(pc < ours.dlfo_map_end);
    }
    int on_the_stack = 0;
    dl_find_object none{};
    CHECK(_dl_find_object(&on_the_stack, &none) == -1);
}

TEST_CASE("dl_find_object: an exception unwinds through it", "[glibc_compat]") {
    std::string caught;
    try {
        thrower(20);
    } catch (const std::runtime_error& e) {
        caught = e.what();
    }
    CHECK(caught == "from depth 0");
}
