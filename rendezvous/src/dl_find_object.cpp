// Keeps ptrun within glibc 2.34 with a static libgcc (launcher/CMakeLists.txt says why libgcc is
// static). GCC 12's unwinder, built against glibc 2.35 or later, finds a frame's unwind table
// through _dl_find_object (GLIBC_2.35). This local definition answers it as the unwinder did
// before that function existed, through dl_iterate_phdr: the PT_GNU_EH_FRAME segment of the
// loaded object whose PT_LOAD segments hold the address. Hidden: nothing outside the binary
// binds to it, and where libgcc_s is loaded (the sanitizer builds) it calls glibc's own.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <link.h>

#include <cstdint>

namespace {

struct Search {
    std::uintptr_t pc;
    dl_find_object* result;
};

int visit(dl_phdr_info* info, std::size_t, void* data) {
    auto* search = static_cast<Search*>(data);
    std::uintptr_t low = UINTPTR_MAX;
    std::uintptr_t high = 0;
    bool holds_pc = false;
    const ElfW(Phdr)* eh_frame = nullptr;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& segment = info->dlpi_phdr[i];
        if (segment.p_type == PT_LOAD) {
            const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
            const std::uintptr_t end = start + segment.p_memsz;
            if (start < low) low = start;
            if (end > high) high = end;
            if (search->pc >= start && search->pc < end) holds_pc = true;
        } else if (segment.p_type == PT_GNU_EH_FRAME) {
            eh_frame = &segment;
        }
    }
    if (!holds_pc) return 0;
    dl_find_object& r = *search->result;
    r = dl_find_object{};
    r.dlfo_map_start = reinterpret_cast<void*>(low);
    r.dlfo_map_end = reinterpret_cast<void*>(high);
    r.dlfo_eh_frame =
        eh_frame ? reinterpret_cast<void*>(info->dlpi_addr + eh_frame->p_vaddr) : nullptr;
    return 1;
}

}  // namespace

/// glibc's contract: 0 and `result` filled for the object holding `pc`, -1 when none does.
extern "C" __attribute__((visibility("hidden"))) int _dl_find_object(
    void* pc, dl_find_object* result) noexcept {
    Search search{reinterpret_cast<std::uintptr_t>(pc), result};
    return dl_iterate_phdr(visit, &search) > 0 ? 0 : -1;
}
