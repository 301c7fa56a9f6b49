// The trap: system calls a program makes itself, not through libc's functions (a `syscall`
// instruction in its own code, as Go's runtime and hand-written loops make them), caught by a
// seccomp filter and served by the same interposers as libc's calls.
//
// The filter traps (SECCOMP_RET_TRAP, which raises SIGSYS in the calling thread) the calls the
// seam serves, when they are made from below the shared objects: from the program's own code.
// Calls from a shared object (libc, the dynamic loader, the vDSO, the seam, any other library)
// pass as they did, so the interposers stay the fast path, and the seam's own calls into libc
// are never trapped. The handler reads the call's number and arguments from the thread's
// registers, routes them through calls::system_call (posix/interpose_system_call.cpp), and writes the result
// back as the kernel would: the value, or -errno.
//
// The line is an address, fixed rather than measured, because a filter outlives exec: a helper
// the program execs keeps it, and its libraries, wherever they land, must not be trapped there,
// where no handler is. Linux places a dynamically linked program near 0x5555'5555'4000 and its
// shared objects near 0x7fxx'xxxx'xxxx (a non-PIE program lies lower still); install_trap()
// checks that this process is laid out so before it installs anything.
#include <dlfcn.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"
#include "posix/threads.hpp"

// Calls `function(argument)` with %rsp at `top` (16-byte aligned), and returns to the caller's
// stack.
extern "C" void loopsim_call_on_stack(void* argument, void (*function)(void*), void* top);
__asm__(".text\n"
        ".type loopsim_call_on_stack, @function\n"
        "loopsim_call_on_stack:\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  mov %rdx, %rsp\n"
        "  call *%rsi\n"
        "  mov %rbp, %rsp\n"
        "  pop %rbp\n"
        "  ret\n"
        ".size loopsim_call_on_stack, . - loopsim_call_on_stack\n");

// AddressSanitizer's, where its runtime is loaded (weak: absent otherwise).
extern "C" void __asan_unpoison_memory_region(void const volatile* address, std::size_t size) __attribute__((weak));

namespace loopsim::posix {

namespace {

// From Linux's uapi headers, which glibc's do not export: the flag that says a struct sigaction
// carries its restorer, and si_code for a signal a seccomp filter raised.
constexpr unsigned long kernel_sa_restorer = 0x04000000;
constexpr int sys_seccomp_code = 1;

// Below this address, a call is the program's own; at or above it, a shared object's.
constexpr std::uint64_t shared_objects_from = 0x7000'0000'0000;

// The calls trapped: each one calls::system_call routes to an interposer, and those the trap
// serves itself (rt_sigaction, for SIGSYS's sake; rt_sigprocmask; a thread's clone, its exit
// and brk, served for a program the seam loaded and passed on for any other).
constexpr int trapped_calls[] = {
    SYS_open, SYS_openat, SYS_read, SYS_write, SYS_close, SYS_readv, SYS_writev, SYS_dup, SYS_dup2, SYS_dup3, SYS_fcntl, SYS_ioctl,
    SYS_pipe, SYS_pipe2, SYS_eventfd, SYS_eventfd2, SYS_sendfile,
    SYS_socket, SYS_socketpair, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_connect, SYS_setsockopt,
    SYS_getsockopt, SYS_getsockname, SYS_getpeername, SYS_shutdown, SYS_recvfrom, SYS_sendto, SYS_recvmsg,
    SYS_sendmsg,
    SYS_epoll_create, SYS_epoll_create1, SYS_epoll_ctl, SYS_epoll_wait, SYS_epoll_pwait, SYS_poll, SYS_ppoll,
    SYS_select,
    SYS_clock_gettime, SYS_gettimeofday, SYS_time, SYS_nanosleep, SYS_clock_nanosleep,
    SYS_futex, SYS_getrandom, SYS_exit_group,
    SYS_fork, SYS_vfork, SYS_clone, SYS_clone3, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
    SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_brk, SYS_exit,
    SYS_fstat, SYS_newfstatat, SYS_lseek, SYS_splice, SYS_tee, SYS_pselect6, SYS_alarm, SYS_setitimer, SYS_getitimer,
    SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_rt_sigpending, SYS_signalfd, SYS_signalfd4, SYS_kill,
    SYS_tgkill, SYS_getrlimit, SYS_setrlimit, SYS_prlimit64, SYS_sched_yield, SYS_wait4, SYS_execve,
};
static_assert(std::size(trapped_calls) < 250, "a filter's jumps reach 255 instructions");

bool installed = false;
bool tsc_trapped = false;  // rdtsc faults (PR_TSC_SIGSEGV), and is answered in virtual time

// The program's own actions for the signals the seam keeps for itself: the seam's handlers stay
// installed, and the trap's pass on what is not theirs.
struct sigaction default_action() {
  struct sigaction a{};
  a.sa_handler = SIG_DFL;
  return a;
}
struct sigaction program_sigsys = default_action();
struct sigaction program_sigsegv = default_action();
struct sigaction program_preempt = default_action();

// Where the program's action for `signal` is kept, if the seam keeps that signal now.
struct sigaction* kept_slot(int signal) {
  if (signal == SIGSYS && installed) return &program_sigsys;
  if (signal == SIGSEGV && tsc_trapped) return &program_sigsegv;
  if (signal == preempt_signal() && current != nullptr) return &program_preempt;
  return nullptr;
}

// The kernel's struct sigaction (rt_sigaction's), not libc's.
struct KernelAction {
  void* handler;
  unsigned long flags;
  void* restorer;
  std::uint64_t mask;
};

// rt_sigaction made by the program itself: as libc's sigaction, through its interposer, so that
// the seam's signals and SIGSYS are kept as they are for any other caller.
long kernel_sigaction(const long* a) {
  if (std::size_t(a[3]) != sizeof(std::uint64_t)) return -EINVAL;
  KernelAction given{};
  if (a[1] != 0 && !calls::copy_in(&given, reinterpret_cast<const void*>(a[1]), sizeof given)) return -EFAULT;
  struct sigaction action{}, old{};
  if (a[1] != 0) {
    action.sa_handler = reinterpret_cast<sighandler_t>(given.handler);
    sigemptyset(&action.sa_mask);
    std::memcpy(&action.sa_mask, &given.mask, sizeof given.mask);
    action.sa_flags = int(given.flags & ~kernel_sa_restorer);  // libc's restorer, not its
  }
  if (::sigaction(int(a[0]), a[1] != 0 ? &action : nullptr, a[2] != 0 ? &old : nullptr) != 0) return -errno;
  if (a[2] != 0) {
    KernelAction told{reinterpret_cast<void*>(old.sa_handler), static_cast<unsigned long>(old.sa_flags),
                      reinterpret_cast<void*>(old.sa_restorer), 0};
    std::memcpy(&told.mask, &old.sa_mask, sizeof told.mask);
    std::memcpy(reinterpret_cast<void*>(a[2]), &told, sizeof told);
  }
  return 0;
}

// rt_sigprocmask made by the program itself. The mask it changes is the one the thread returns
// to from this handler (`mask`, the context's), which the kernel restores at sigreturn; the
// signals the seam keeps are never blocked in it (keep_unblocked), as with libc's calls.
long kernel_sigprocmask(sigset_t& mask, const long* a) {
  if (std::size_t(a[3]) != sizeof(std::uint64_t)) return -EINVAL;
  std::uint64_t now = 0, given = 0;
  std::memcpy(&now, &mask, sizeof now);
  if (a[1] != 0 && !calls::copy_in(&given, reinterpret_cast<const void*>(a[1]), sizeof given)) return -EFAULT;
  std::uint64_t next = now;
  if (a[1] != 0) {
    switch (a[0]) {
      case SIG_BLOCK: next = now | given; break;
      case SIG_UNBLOCK: next = now & ~given; break;
      case SIG_SETMASK: next = given; break;
      default: return -EINVAL;
    }
  }
  std::memcpy(&mask, &next, sizeof next);
  keep_unblocked(mask);
  sigdelset(&mask, SIGKILL);
  sigdelset(&mask, SIGSTOP);
  std::memcpy(&next, &mask, sizeof next);
  // A thread's mask is also the seam's for a scenario's signals, as its libc calls keep it.
  if (calls::making()) {
    sigset_t blocked;
    sigemptyset(&blocked);
    std::memcpy(&blocked, &next, sizeof next);
    calls::mask_now(blocked);
  }
  // The old mask is written last: a bad pointer there fails the call, the mask already changed,
  // as Linux's rt_sigprocmask has it.
  if (a[2] != 0 && !calls::copy_out(reinterpret_cast<void*>(a[2]), &now, sizeof now)) return -EFAULT;
  return 0;
}

// clone3's argument (linux/sched.h's struct clone_args, its first eight fields).
struct CloneArgs {
  std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

// A trapped call's result, as the kernel returns it. `context` is the one the thread returns
// to, with the mask it returns to.
long trapped_call(int number, const long* a, ucontext_t& context) {
  if (number == SYS_rt_sigaction) return kernel_sigaction(a);
  if (number == SYS_rt_sigprocmask) return kernel_sigprocmask(context.uc_sigmask, a);
  if (number == SYS_brk) return program_loaded() ? program_break(a[0]) : LOOPSIM_REAL(syscall)(SYS_brk, a[0]);
  if (number == SYS_exit) {
    exit_thread();  // a thread its own clone made ends here; any other as Linux ends it
    return LOOPSIM_REAL(syscall)(SYS_exit, a[0]);
  }
  CloneArgs clone{static_cast<unsigned long>(a[0]), 0, std::uint64_t(a[3]), std::uint64_t(a[2]), 0,
                  std::uint64_t(a[1]), 0, std::uint64_t(a[4])};  // clone's order: flags, stack, ptid, ctid, tls
  if (number == SYS_clone3) {
    clone = CloneArgs{};
    if (a[0] == 0 || std::size_t(a[1]) < sizeof clone ||
        !calls::copy_in(&clone, reinterpret_cast<const void*>(a[0]), sizeof clone)) {
      return -EFAULT;
    }
    if (clone.stack != 0) clone.stack += clone.stack_size;  // its top
  }
  const bool thread = (number == SYS_clone || number == SYS_clone3) && (clone.flags & CLONE_THREAD) != 0;
  // A loaded program's process, made by its own fork or clone (static glibc's fork, system and
  // posix_spawn): forked as libc's fork is served, a child the seam runs as far as its exec.
  // A child that shares its parent's memory (CLONE_VM, CLONE_VFORK: posix_spawn's) gets a copy,
  // on the stack it was given, as the seam's vfork does.
  const bool process = number == SYS_fork || number == SYS_vfork || ((number == SYS_clone || number == SYS_clone3) && !thread);
  if (process && keeps_thread_pointer() && calls::making()) {
    errno = 0;
    const pid_t pid = ::fork();
    if (pid < 0) return -errno;
    if (pid == 0) {
      if ((clone.flags & CLONE_CHILD_SETTID) != 0) put_thread_word(reinterpret_cast<int*>(clone.child_tid), int(::gettid()));
      if (clone.stack != 0) context.uc_mcontext.gregs[REG_RSP] = greg_t(clone.stack);
    } else if ((clone.flags & CLONE_PARENT_SETTID) != 0) {
      put_thread_word(reinterpret_cast<int*>(clone.parent_tid), pid);
    }
    return pid;
  }
  // A loaded program's threads are all made so (Go's runtime, static glibc's pthread_create).
  if (thread && keeps_thread_pointer() && calls::making()) {
    if (clone.stack == 0) return -EINVAL;
    return clone_thread(context, clone.flags | clone.exit_signal, clone.stack, clone.tls,
                        reinterpret_cast<int*>(clone.parent_tid), reinterpret_cast<int*>(clone.child_tid));
  }
  // Any other program's thread clone is not made from a signal handler: the new thread would
  // return into the handler's frame on the stack the call gave it.
  if (thread) {
    if (current != nullptr && current->active()) {
      current->refuse(number == SYS_clone ? "clone(CLONE_THREAD)" : "clone3(CLONE_THREAD)", -1,
                      "a thread made by the program's own system call, not by pthread_create, is not served "
                      "(a Go program built without cgo makes its threads so; docs/targets.md)");
    }
    return -ENOSYS;
  }
  errno = 0;
  const long rc = calls::system_call(number, a, true);
  return rc == -1 && errno != 0 ? -errno : rc;
}

// A signal the trap's handler does not take (a SIGSYS no filter raised, as kill sends; a SIGSEGV
// that is not rdtsc) is the program's, by its own action.
void pass_on(const struct sigaction& theirs, int signal, siginfo_t* info, void* context) {
  if ((theirs.sa_flags & SA_SIGINFO) != 0) {
    run_handler(theirs.sa_sigaction, signal, info, context);
  } else if (theirs.sa_handler == SIG_DFL) {
    // Its default: the process ends, with a core as Linux's would. A fault comes again as the
    // instruction is run again; another signal is raised again, on the way out.
    struct sigaction fallback = default_action();
    LOOPSIM_REAL(sigaction)(signal, &fallback, nullptr);
    if (info->si_code <= 0 || signal == SIGSYS) LOOPSIM_REAL(tgkill)(::getpid(), ::gettid(), signal);
  } else if (theirs.sa_handler != SIG_IGN) {
    run_handler(theirs.sa_sigaction, signal, info, context);  // sa_handler is the same pointer: it ignores the rest
  }
}

// rdtsc (0f 31) and rdtscp (0f 01 f9), which fault once PR_TSC_SIGSEGV is set: the virtual
// monotonic clock's nanoseconds as the counter (Go seeds its per-thread random numbers with it,
// and so its maps' iteration order), and processor 0 for rdtscp.
void on_sigsegv(int signal, siginfo_t* info, void* context) {
  greg_t* registers = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
  const auto* at = reinterpret_cast<const unsigned char*>(registers[REG_RIP]);
  // A general protection fault: SI_KERNEL, no address. Its instruction's bytes are readable,
  // since the processor was running them.
  const bool general = info->si_code == SI_KERNEL && tsc_trapped;
  const int length = !general || at[0] != 0x0f ? 0 : at[1] == 0x31 ? 2 : (at[1] == 0x01 && at[2] == 0xf9) ? 3 : 0;
  if (length == 0) {
    pass_on(program_sigsegv, signal, info, context);
    return;
  }
  const int saved = errno;
  std::uint64_t ticks = 0;
  if (current != nullptr && current->active()) {
    ticks = std::uint64_t(calls::monotonic_origin_ns + since_start(current->now()).count());
  } else {
    timespec now{};
    real_clock(CLOCK_MONOTONIC, &now);
    ticks = std::uint64_t(now.tv_sec) * 1'000'000'000 + std::uint64_t(now.tv_nsec);
  }
  errno = saved;
  registers[REG_RAX] = greg_t(ticks & 0xffffffff);
  registers[REG_RDX] = greg_t(ticks >> 32);
  if (length == 3) registers[REG_RCX] = 0;
  registers[REG_RIP] += length;
}

// A trapped call is served on a stack of the seam's: the program's may be small (a goroutine's
// starts at a few KiB), and serving a call runs the simulation. One per thread, made at its
// first trapped call, as large as a main thread's. While it serves, its lowest part is also the
// thread's alternate signal stack, so that a signal that comes meanwhile (one with SA_ONSTACK,
// as every Go handler is) stacks its frame there, not over the frame of the SIGSYS that started
// it, which lies on the program's alternate stack; a call trapped meanwhile (from a handler of
// the program's, on that part) is served where that one stands.
constexpr std::size_t trap_stack_size = 8 << 20;

struct TrapStack {
  char* base = nullptr;
  stack_t program{};  // the thread's alternate stack, while the trap stack stands in for it
  ~TrapStack() {
    if (base != nullptr) LOOPSIM_REAL(munmap)(base, trap_stack_size);
  }
};
thread_local TrapStack trap_stack;

struct Call {
  int number;
  const long* arguments;
  ucontext_t* context;  // the one the thread returns to
  long rc;
};

void serve(void* call) {
  auto& c = *static_cast<Call*>(call);
  c.rc = trapped_call(c.number, c.arguments, *c.context);
}

// On the trap stack: its lowest part becomes the alternate one (allowed, as this thread is not
// on the alternate stack it replaces), and the call is served from its top. Not the whole of
// it: on the engine's OS thread, main()'s call may wait while the engine runs its fibers, and a
// signal that comes then (with the engine's stack pointer elsewhere) is stacked from the top of
// the alternate stack, where it would overwrite the frames of the call that waits.
constexpr std::size_t signal_part = 1 << 20;

void serve_as_alternate(void* call) {
  stack_t mine{};
  mine.ss_sp = trap_stack.base;
  mine.ss_size = signal_part;
  LOOPSIM_REAL(sigaltstack)(&mine, &trap_stack.program);
  serve(call);
}

void serve_on_trap_stack(Call& call) {
  char* base = trap_stack.base;
  if (base == nullptr) {
    void* made = LOOPSIM_REAL(mmap)(nullptr, trap_stack_size, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (made == MAP_FAILED) {
      static const char text[] = "loopsim seam: no memory for a stack to serve a trapped system call on\n";
      LOOPSIM_REAL(write)(2, text, sizeof text - 1);
      LOOPSIM_REAL(_exit)(2);
    }
    base = trap_stack.base = static_cast<char*>(made);
    // Under AddressSanitizer (the seam's engine built with it: scripts/seam_asan.sh), the
    // addresses may be an ended thread's trap stack's, whose frames never returned (its exit
    // jumps off it): their poison is not this stack's.
    if (__asan_unpoison_memory_region != nullptr) __asan_unpoison_memory_region(made, trap_stack_size);
  }
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  if (here >= base && here < base + trap_stack_size) {
    serve(&call);
    return;
  }
  loopsim_call_on_stack(&call, serve_as_alternate, base + trap_stack_size);
  // Back on the stack the signal came on: the program's alternate stack is its own again. (A
  // signal between the two lands on the trap stack, where nothing is left to overwrite.)
  LOOPSIM_REAL(sigaltstack)(&trap_stack.program, nullptr);
}

void on_sigsys(int signal, siginfo_t* info, void* context) {
  if (info->si_code != sys_seccomp_code || !installed) {
    pass_on(program_sigsys, signal, info, context);
    return;
  }
  auto* interrupted = static_cast<ucontext_t*>(context);
  greg_t* registers = interrupted->uc_mcontext.gregs;
  const long a[6] = {registers[REG_RDI], registers[REG_RSI], registers[REG_RDX],
                     registers[REG_R10], registers[REG_R8],  registers[REG_R9]};
  const int saved = errno;  // the program's: a system call never touches it
  Call call{info->si_syscall, a, interrupted, 0};
  serve_on_trap_stack(call);
  registers[REG_RAX] = call.rc;
  errno = saved;
}

// Whether the process is laid out as the filter assumes: the program below the line, every
// shared object above it. The first that is not, named.
struct Layout {
  std::string wrong;
};

int check_object(dl_phdr_info* info, std::size_t, void* data) {
  auto& layout = *static_cast<Layout*>(data);
  const bool program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  for (int i = 0; i < info->dlpi_phnum && layout.wrong.empty(); ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    const std::uint64_t begin = info->dlpi_addr + segment.p_vaddr, end = begin + segment.p_memsz;
    if (program && end > shared_objects_from) layout.wrong = "the program's code lies among the shared objects'";
    if (!program && begin < shared_objects_from) {
      layout.wrong = std::string("the shared object ") + info->dlpi_name + " lies below the program's line";
    }
  }
  return layout.wrong.empty() ? 0 : 1;
}

std::vector<sock_filter> filter() {
  std::vector<sock_filter> f;
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  // The instruction pointer's upper half: a shared object's call passes.
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer) + 4));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, std::uint32_t(shared_objects_from >> 32), 0, 1));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  const auto n = std::size(trapped_calls);
  for (std::size_t i = 0; i < n; ++i) {
    // Matched: on past the others and the ALLOW after them, to the TRAP.
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, std::uint32_t(trapped_calls[i]), std::uint8_t(n - i), 0));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  return f;
}

std::string failed(const char* step) { return std::string(step) + ": " + std::strerror(errno); }

}  // namespace

std::string install_trap(bool trap_tsc) {
  Layout layout;
  dl_iterate_phdr(check_object, &layout);
  if (!layout.wrong.empty()) return layout.wrong + " (an address layout the filter does not expect)";
  struct sigaction action{};
  action.sa_sigaction = on_sigsys;
  // SA_NODEFER: a handler of the program's that the seam runs from within may make a trapped
  // call of its own. SA_ONSTACK: the kernel's frame goes on the thread's alternate stack where
  // it has one (a goroutine's own stack is too small for it).
  action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  if (install_action(SIGSYS, &action, &program_sigsys, true) != 0) return failed("sigaction(SIGSYS)");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("prctl(PR_SET_NO_NEW_PRIVS)");
  std::vector<sock_filter> f = filter();
  sock_fprog program{static_cast<unsigned short>(f.size()), f.data()};
  if (LOOPSIM_REAL(syscall)(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0) {
    install_action(SIGSYS, &program_sigsys, nullptr, true);
    return failed("seccomp(SECCOMP_SET_MODE_FILTER)");
  }
  installed = true;
  // rdtsc: where the processor cannot trap it (no such flag), it reads the machine's counter.
  // The flag outlives exec, and glibc's loader reads the counter as it starts a program: a
  // helper the program execs, with no handler, would die of it. So only for a program libc does
  // not start (Go's runtime, which starts its helpers with its own clone, refused anyway).
  action.sa_sigaction = on_sigsegv;
  if (trap_tsc && install_action(SIGSEGV, &action, &program_sigsegv, true) == 0) {
    tsc_trapped = ::prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) == 0;
    if (!tsc_trapped) install_action(SIGSEGV, &program_sigsegv, nullptr, true);
  }
  return {};
}

bool trap_installed() { return installed; }

int real_clock(clockid_t clock, timespec* t) {
  return int(LOOPSIM_REAL(syscall)(SYS_clock_gettime, long(clock), reinterpret_cast<long>(t)));
}

void keep_unblocked(sigset_t& set, bool preemption) {
  if (installed) sigdelset(&set, SIGSYS);
  if (tsc_trapped) sigdelset(&set, SIGSEGV);
  if (preemption) sigdelset(&set, preempt_signal());
}

void untrap_tsc() {
  if (tsc_trapped) tsc_trapped = ::prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0) != 0;
}

bool seam_keeps(int signal) { return kept_slot(signal) != nullptr; }

long kept_action(int signal, const struct sigaction* action, struct sigaction* old) {
  struct sigaction* slot = kept_slot(signal);
  LOOPSIM_ASSERT(slot != nullptr);  // called only for a signal seam_keeps
  struct sigaction& theirs = *slot;
  if (old != nullptr) *old = theirs;
  if (action != nullptr) theirs = *action;
  return 0;
}

}  // namespace loopsim::posix
