// Keeps the executables and libptrun_store_c.so within the glibc of their manylinux tag
// (python/make_wheel.py). The static libstdc++ of GCC 12 on Debian 12 refers to arc4random
// (GLIBC_2.36) from std::random_device, which every static libstdc++ link pulls in although ptrun
// never uses it (Backoff seeds from getrandom). This local definition satisfies that reference, so
// the binaries need glibc 2.34, not 2.36. Hidden: nothing outside the binary binds to it.
#include <sys/random.h>

#include <cstdint>
#include <ctime>

extern "C" __attribute__((visibility("hidden"))) std::uint32_t arc4random() {
    std::uint32_t value = 0;
    if (::getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        value = static_cast<std::uint32_t>(now.tv_nsec) ^ static_cast<std::uint32_t>(now.tv_sec);
    }
    return value;
}
