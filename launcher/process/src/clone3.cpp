#include "clone3.hpp"

#include <linux/sched.h>
#include <sys/syscall.h>

#include <cerrno>
#include <csignal>
#include <cstdint>

#if defined(__x86_64__) && defined(SYS_clone3)
// long ptrun_clone3_run(clone_args* args, size_t size, int (*fn)(void*), void* arg)
// The child starts on args->stack with every register of the parent but rax (0) and rsp: fn and
// arg travel in r8 and r9, which the system call preserves. It never returns into C++ frames.
asm(R"(
    .text
    .globl ptrun_clone3_run
    .hidden ptrun_clone3_run
    .type ptrun_clone3_run, @function
ptrun_clone3_run:
    .cfi_startproc
    mov %rdx, %r8
    mov %rcx, %r9
    mov $)"
    "435"
    R"(, %eax
    syscall
    test %rax, %rax
    jz 1f
    ret
1:
    .cfi_undefined rip
    xor %ebp, %ebp
    mov %r9, %rdi
    call *%r8
    mov %eax, %edi
    mov $60, %eax
    syscall
    hlt
    .cfi_endproc
    .size ptrun_clone3_run, .-ptrun_clone3_run
)");
extern "C" long ptrun_clone3_run(clone_args* args, std::size_t size, int (*fn)(void*), void* arg);
static_assert(SYS_clone3 == 435, "the assembly above uses clone3's x86-64 number");
#endif

namespace ptrun::launcher {

long clone_vfork_into_cgroup(int cgroup_fd, char* stack, std::size_t stack_size, int (*fn)(void*),
                             void* arg) {
#if defined(__x86_64__) && defined(SYS_clone3) && defined(CLONE_INTO_CGROUP)
    clone_args args{};
    args.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.stack = reinterpret_cast<__u64>(stack);
    args.stack_size = static_cast<__u64>(stack_size);
    args.cgroup = static_cast<__u64>(cgroup_fd);
    return ptrun_clone3_run(&args, sizeof args, fn, arg);
#else
    (void)cgroup_fd;
    (void)stack;
    (void)stack_size;
    (void)fn;
    (void)arg;
    return -ENOSYS;
#endif
}

}  // namespace ptrun::launcher
