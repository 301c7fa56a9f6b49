// A statically linked program, loaded by the seam: no loader of Linux's maps a preloaded library
// into it, so loopsim starts a small dynamically linked host (posix/seam_host.c) with the
// seam preloaded, and the seam maps the program's segments into that process and enters it, as
// Linux's exec would, with the program's own auxiliary vector. Every system call the program
// makes is then its own, and the trap (posix/interpose_trap.cpp) serves them.
//
// Two things a dynamically linked program shares with the seam, such a program keeps apart:
//  - **Its thread pointer.** The program sets %fs to its own thread-local storage (Go's runtime
//    for each of its threads, static glibc once), where the seam's code, compiled against the
//    host's libc, reads its own (errno, thread_local, the stack protector's canary). So each OS
//    thread that runs the program's code has a block (%gs points to it; neither Go nor glibc
//    uses %gs on x86-64) holding both values, and every way between the two sides swaps %fs: a
//    signal the seam handles comes in through loopsim_seam_signal_entry, one the program handles
//    through loopsim_program_signal_entry, and the seam runs a handler of the program's through
//    loopsim_call_program. The kernel does not save %fs in a signal frame, so each of them puts
//    back the value it found.
//  - **Its threads.** Made by its own clone (Go's runtime; static glibc's pthread_create), which
//    the trap serves by making a thread of the seam's (Seam::create_thread, on the baton) that
//    enters the program where clone returns: the parent's registers, with the child's stack
//    and a 0 result, restored by rt_sigreturn from a frame made for it. Its exit (a raw
//    SYS_exit) returns to that thread's start, which ends as a thread of the seam's ends.
// And its break (brk), which would otherwise be the host's heap's: served from a region after
// its last segment, as Linux places a program's.
#include <elf.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"
#include "posix/threads.hpp"

// The per-thread block %gs points to, in a thread that runs the program's code.
struct LoopsimThreadBlock {
  std::uint64_t seam_fs;     // the host's libc's thread pointer for this OS thread
  std::uint64_t program_fs;  // the program's, as it last left its own code
};

extern "C" {
// Whether rdfsbase and its kin may be used (Linux 5.9 on, where the processor has them): else
// arch_prctl, a system call from the seam's code, which the filter lets pass.
__attribute__((visibility("hidden"))) unsigned char loopsim_fsgsbase = 0;
// The handlers the entries below call, by signal.
__attribute__((visibility("hidden"))) void (*loopsim_seam_handlers[65])(int, siginfo_t*, void*) = {};
__attribute__((visibility("hidden"))) void (*loopsim_program_handlers[65])(int, siginfo_t*, void*) = {};
void loopsim_seam_signal_entry(int, siginfo_t*, void*);
void loopsim_program_signal_entry(int, siginfo_t*, void*);
void loopsim_call_program(int, siginfo_t*, void*, void (*)(int, siginfo_t*, void*));
[[noreturn]] void loopsim_resume_context(void* frame, std::uint64_t fs);
}

// The thread pointers, read and set: rax is the value read, rdi the value set; each clobbers
// rax, rcx, rsi, rdi, r11 and nothing else. loopsim_get_gs gives the thread's block, or 0.
__asm__(".text\n"
        ".type loopsim_get_fs, @function\n"
        "loopsim_get_fs:\n"
        "  cmpb $0, loopsim_fsgsbase(%rip)\n"
        "  je 1f\n"
        "  rdfsbase %rax\n"
        "  ret\n"
        "1:\n"
        "  sub $8, %rsp\n"
        "  mov $0x1003, %edi\n"  // ARCH_GET_FS
        "  mov %rsp, %rsi\n"
        "  mov $158, %eax\n"     // arch_prctl
        "  syscall\n"
        "  pop %rax\n"
        "  ret\n"
        ".size loopsim_get_fs, . - loopsim_get_fs\n"
        ".type loopsim_get_gs, @function\n"
        "loopsim_get_gs:\n"
        "  cmpb $0, loopsim_fsgsbase(%rip)\n"
        "  je 1f\n"
        "  rdgsbase %rax\n"
        "  ret\n"
        "1:\n"
        "  sub $8, %rsp\n"
        "  mov $0x1004, %edi\n"  // ARCH_GET_GS
        "  mov %rsp, %rsi\n"
        "  mov $158, %eax\n"
        "  syscall\n"
        "  pop %rax\n"
        "  ret\n"
        ".size loopsim_get_gs, . - loopsim_get_gs\n"
        ".type loopsim_set_fs, @function\n"
        "loopsim_set_fs:\n"
        "  cmpb $0, loopsim_fsgsbase(%rip)\n"
        "  je 1f\n"
        "  wrfsbase %rdi\n"
        "  ret\n"
        "1:\n"
        "  mov %rdi, %rsi\n"
        "  mov $0x1002, %edi\n"  // ARCH_SET_FS
        "  mov $158, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size loopsim_set_fs, . - loopsim_set_fs\n"

        // What the three entries below share. loopsim_enter saves the callee-saved registers,
        // keeps the handler's three arguments (r12, r13, r14), the thread pointer found (r15)
        // and the thread's block, or 0 (rbx); loopsim_leave puts back the thread pointer found
        // and the registers. loopsim_arguments puts the handler's three arguments back in place.
        ".macro loopsim_enter\n"
        "  push %rbx\n"
        "  push %r12\n"
        "  push %r13\n"
        "  push %r14\n"
        "  push %r15\n"
        "  movslq %edi, %r12\n"
        "  mov %rsi, %r13\n"
        "  mov %rdx, %r14\n"
        "  call loopsim_get_fs\n"
        "  mov %rax, %r15\n"
        "  call loopsim_get_gs\n"
        "  mov %rax, %rbx\n"
        ".endm\n"
        ".macro loopsim_arguments\n"
        "  mov %r12d, %edi\n"
        "  mov %r13, %rsi\n"
        "  mov %r14, %rdx\n"
        ".endm\n"
        ".macro loopsim_leave\n"
        "  call loopsim_get_fs\n"
        "  cmp %rax, %r15\n"
        "  je 9f\n"
        "  mov %r15, %rdi\n"
        "  call loopsim_set_fs\n"
        "9:\n"
        "  pop %r15\n"
        "  pop %r14\n"
        "  pop %r13\n"
        "  pop %r12\n"
        "  pop %rbx\n"
        ".endm\n"

        // A signal the seam handles: the seam's thread pointer while its handler runs (the
        // program's, when the signal came in its code, kept in the block for the way back in).
        ".globl loopsim_seam_signal_entry\n"
        ".hidden loopsim_seam_signal_entry\n"
        ".type loopsim_seam_signal_entry, @function\n"
        "loopsim_seam_signal_entry:\n"
        "  loopsim_enter\n"
        "  test %rbx, %rbx\n"
        "  jz 1f\n"
        "  mov (%rbx), %rdi\n"
        "  cmp %rdi, %r15\n"
        "  je 1f\n"
        "  mov %r15, 8(%rbx)\n"
        "  call loopsim_set_fs\n"
        "1:\n"
        "  lea loopsim_seam_handlers(%rip), %rax\n"
        "  loopsim_arguments\n"
        "  call *(%rax,%r12,8)\n"
        "  loopsim_leave\n"
        "  ret\n"
        ".size loopsim_seam_signal_entry, . - loopsim_seam_signal_entry\n"

        // A signal the program handles: its thread pointer while its handler runs (the one the
        // thread had in the program's code, when the signal came in the seam's).
        ".globl loopsim_program_signal_entry\n"
        ".hidden loopsim_program_signal_entry\n"
        ".type loopsim_program_signal_entry, @function\n"
        "loopsim_program_signal_entry:\n"
        "  loopsim_enter\n"
        "  test %rbx, %rbx\n"
        "  jz 1f\n"
        "  cmp (%rbx), %r15\n"
        "  jne 3f\n"
        "  mov 8(%rbx), %rdi\n"
        "  cmp %rdi, %r15\n"
        "  je 1f\n"
        "  call loopsim_set_fs\n"
        "  jmp 1f\n"
        "3:\n"
        "  mov %r15, 8(%rbx)\n"
        "1:\n"
        "  lea loopsim_program_handlers(%rip), %rax\n"
        "  loopsim_arguments\n"
        "  call *(%rax,%r12,8)\n"
        "  loopsim_leave\n"
        "  ret\n"
        ".size loopsim_program_signal_entry, . - loopsim_program_signal_entry\n"

        // The seam runs a handler of the program's: its three arguments, then the handler (rcx),
        // kept on the stack above the saved registers.
        ".globl loopsim_call_program\n"
        ".hidden loopsim_call_program\n"
        ".type loopsim_call_program, @function\n"
        "loopsim_call_program:\n"
        "  push %rcx\n"
        "  sub $8, %rsp\n"
        "  loopsim_enter\n"
        "  test %rbx, %rbx\n"
        "  jz 1f\n"
        "  mov 8(%rbx), %rdi\n"
        "  cmp %rdi, %r15\n"
        "  je 1f\n"
        "  call loopsim_set_fs\n"
        "1:\n"
        "  loopsim_arguments\n"
        "  call *48(%rsp)\n"
        "  loopsim_leave\n"
        "  add $16, %rsp\n"
        "  ret\n"
        ".size loopsim_call_program, . - loopsim_call_program\n"

        // Into the program's code, for good: its thread pointer, then every register and the
        // signal mask from the frame (rdi: its ucontext, as rt_sigreturn reads it at %rsp).
        ".globl loopsim_resume_context\n"
        ".hidden loopsim_resume_context\n"
        ".type loopsim_resume_context, @function\n"
        "loopsim_resume_context:\n"
        "  mov %rdi, %r12\n"
        "  mov %rsi, %rdi\n"
        "  call loopsim_set_fs\n"
        "  mov %r12, %rsp\n"
        "  mov $15, %eax\n"  // rt_sigreturn
        "  syscall\n"
        "  ud2\n"
        ".size loopsim_resume_context, . - loopsim_resume_context\n");

namespace loopsim::posix {

namespace {

constexpr unsigned long hwcap2_fsgsbase = 1ul << 1;  // Linux's HWCAP2_FSGSBASE (asm/hwcap2.h)
constexpr int arch_set_gs = 0x1001, arch_get_fs = 0x1003, arch_get_gs = 0x1004;

struct Loaded {
  std::string path;
  std::uint64_t entry = 0;
  std::uint64_t phdr = 0;  // where its program headers lie in memory
  std::uint64_t phnum = 0;
  std::uint64_t break_start = 0, break_now = 0, break_mapped = 0;
};
Loaded* loaded = nullptr;
// Whether the program keeps a thread pointer of its own: a loaded one, or one the loader
// started that links no library (Go built without cgo as a PIE).
bool own_thread_pointer = false;

constexpr std::uint64_t page = 4096;
// 32 TiB: below the trap's line, above what Linux gives a process by default, and outside
// AddressSanitizer's shadow (which ends near 16 TiB), for the seam built with it.
constexpr std::uint64_t static_pie_base = 0x2000'0000'0000;
std::uint64_t page_down(std::uint64_t a) { return a & ~(page - 1); }
std::uint64_t page_up(std::uint64_t a) { return (a + page - 1) & ~(page - 1); }

// A thread pointer of this OS thread: `code` is arch_get_fs or arch_get_gs.
std::uint64_t read_base(int code) {
  std::uint64_t base = 0;
  LOOPSIM_REAL(syscall)(SYS_arch_prctl, code, &base);
  return base;
}
std::uint64_t read_fs() { return read_base(arch_get_fs); }

// This OS thread runs the program's code from now on, with `program_fs` its thread pointer
// there. The block lives as long as the thread: the main thread's for the process, a clone's
// on its own stack.
void adopt_thread(LoopsimThreadBlock& block, std::uint64_t program_fs) {
  block.seam_fs = read_fs();
  block.program_fs = program_fs;
  LOOPSIM_REAL(syscall)(SYS_arch_prctl, arch_set_gs, &block);
}

// A program's thread made by its own clone.
struct CloneStart {
  ucontext_t context;  // the parent's, as the trap found it: the child's, but for rsp and rax
  std::uint64_t fs = 0;
  int* child_settid = nullptr;
  int* child_cleartid = nullptr;
};

// Where a clone's thread goes back to as it exits (its SYS_exit), and the word it clears then.
thread_local sigjmp_buf* clone_exit = nullptr;
thread_local int* clone_cleartid = nullptr;

// rt_sigreturn's view of the stack: it reads the ucontext at %rsp, after the word a handler's
// return address took.
struct ResumeFrame {
  void* restorer;
  ucontext_t context;
};

void* clone_started(void* argument) {
  std::unique_ptr<CloneStart> start(static_cast<CloneStart*>(argument));
  LoopsimThreadBlock block{};
  adopt_thread(block, start->fs);
  put_thread_word(start->child_settid, int(::gettid()));
  clone_cleartid = start->child_cleartid;
  auto frame = std::make_unique<ResumeFrame>();
  frame->context = start->context;
  frame->context.uc_link = nullptr;
  frame->context.uc_flags = 0;
  frame->context.uc_stack = stack_t{nullptr, SS_DISABLE, 0};
  frame->context.uc_mcontext.fpregs = nullptr;  // the floating-point state starts afresh
  keep_unblocked(frame->context.uc_sigmask);
  const std::uint64_t fs = start->fs;
  start.reset();
  sigjmp_buf exit_point;
  clone_exit = &exit_point;
  if (sigsetjmp(exit_point, 1) == 0) loopsim_resume_context(&frame->context, fs);
  // The program's thread exited (exit_thread): this one ends as a thread of the seam's.
  clone_exit = nullptr;
  LOOPSIM_REAL(syscall)(SYS_arch_prctl, arch_set_gs, nullptr);
  return nullptr;
}

}  // namespace

std::string load_program(const char* path) {
  const int fd = LOOPSIM_REAL(open)(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { LOOPSIM_REAL(close)(fd); }
  } closer{fd};
  Elf64_Ehdr header{};
  if (::pread(fd, &header, sizeof header, 0) != ssize_t(sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "it is not an ELF program";
  if ((header.e_type != ET_EXEC && header.e_type != ET_DYN) || header.e_machine != EM_X86_64)
    return "it is not an x86-64 program (ELF type EXEC, or DYN for a static-pie)";
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum > 64) return "its program headers are malformed";
  std::vector<Elf64_Phdr> headers(header.e_phnum);
  const auto size = ssize_t(headers.size() * sizeof(Elf64_Phdr));
  if (::pread(fd, headers.data(), std::size_t(size), off_t(header.e_phoff)) != size) return "its program headers are cut short";
  // A position-independent one (static-pie) goes where Linux would put it, were that not where
  // the host is: at a base of its own, below the line under which the trap traps. It relocates
  // itself (glibc's _dl_relocate_static_pie) from what its auxiliary vector says.
  const std::uint64_t base = header.e_type == ET_DYN ? static_pie_base : 0;
  auto l = std::make_unique<Loaded>();
  l->path = path;
  l->entry = base + header.e_entry;
  l->phnum = header.e_phnum;
  for (const Elf64_Phdr& h : headers) {
    if (h.p_type == PT_INTERP) return "it names a program interpreter: it is dynamically linked";
    if (h.p_type == PT_TLS || h.p_type != PT_LOAD) continue;
    const std::uint64_t vaddr = base + h.p_vaddr;
    if (h.p_memsz < h.p_filesz || vaddr + h.p_memsz >= 0x7000'0000'0000 || vaddr < 0x10000)
      return "a segment lies where the seam cannot place it";
    // Anonymous memory with the file's bytes copied in, so that the part past the file's (its
    // .bss) is zero, as Linux leaves it.
    const std::uint64_t from = page_down(vaddr), to = page_up(vaddr + h.p_memsz);
    void* at = LOOPSIM_REAL(mmap)(reinterpret_cast<void*>(from), to - from, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (at != reinterpret_cast<void*>(from))
      return "its segment at " + std::to_string(from) + " overlaps what this process holds there";
    if (h.p_filesz > 0 &&
        ::pread(fd, reinterpret_cast<void*>(vaddr), h.p_filesz, off_t(h.p_offset)) != ssize_t(h.p_filesz))
      return "a segment is cut short in the file";
    const int protection = ((h.p_flags & PF_R) ? PROT_READ : 0) | ((h.p_flags & PF_W) ? PROT_WRITE : 0) |
                           ((h.p_flags & PF_X) ? PROT_EXEC : 0);
    LOOPSIM_REAL(mprotect)(reinterpret_cast<void*>(from), to - from, protection);
    if (h.p_offset <= header.e_phoff && header.e_phoff + std::uint64_t(size) <= h.p_offset + h.p_filesz)
      l->phdr = vaddr + (header.e_phoff - h.p_offset);
    l->break_start = std::max(l->break_start, to);
  }
  for (const Elf64_Phdr& h : headers) {
    if (h.p_type == PT_PHDR) l->phdr = base + h.p_vaddr;
  }
  if (l->phdr == 0) return "its program headers are not in a loaded segment";
  l->break_now = l->break_mapped = l->break_start;
  loaded = l.release();
  keep_thread_pointer();
  return {};
}

bool program_loaded() { return loaded != nullptr; }

void keep_thread_pointer() {
  own_thread_pointer = true;
  if (loopsim_fsgsbase == 0 && (::getauxval(AT_HWCAP2) & hwcap2_fsgsbase) != 0) loopsim_fsgsbase = 1;
}

bool keeps_thread_pointer() { return own_thread_pointer; }

void adopt_main_thread() {
  static LoopsimThreadBlock main_block;
  if (own_thread_pointer) adopt_thread(main_block, read_fs());
}

int enter_loaded(int argc, char** argv, char** envp) {
  LOOPSIM_ASSERT(loaded != nullptr && argc >= 2);  // the host's own name, then the program's argv
  adopt_main_thread();
  enter_with(argc - 1, argv + 1, envp,
             {{AT_PHDR, loaded->phdr},
              {AT_PHENT, sizeof(Elf64_Phdr)},
              {AT_PHNUM, loaded->phnum},
              {AT_ENTRY, loaded->entry},
              {AT_BASE, 0},
              {AT_EXECFN, reinterpret_cast<std::uint64_t>(loaded->path.c_str())}});
}

long program_break(long wanted) {
  LOOPSIM_ASSERT(loaded != nullptr);
  Loaded& l = *loaded;
  const auto to = std::uint64_t(wanted);
  if (to < l.break_start) return long(l.break_now);
  if (page_up(to) > l.break_mapped) {
    const std::uint64_t grow = page_up(to) - l.break_mapped;
    void* at = LOOPSIM_REAL(mmap)(reinterpret_cast<void*>(l.break_mapped), grow, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (at != reinterpret_cast<void*>(l.break_mapped)) {
      if (at != MAP_FAILED) LOOPSIM_REAL(munmap)(at, grow);
      return long(l.break_now);  // as Linux: the break stays where it was
    }
    l.break_mapped += grow;
  } else if (page_up(to) < l.break_mapped) {
    LOOPSIM_REAL(munmap)(reinterpret_cast<void*>(page_up(to)), l.break_mapped - page_up(to));
    l.break_mapped = page_up(to);
  }
  l.break_now = to;
  return long(l.break_now);
}

long clone_thread(ucontext_t& parent, std::uint64_t flags, std::uint64_t stack, std::uint64_t tls, int* parent_tid,
                  int* child_tid) {
  constexpr std::uint64_t served = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                                   CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
  if ((flags & ~served & ~std::uint64_t(0xff)) != 0 || (flags & 0xff) != 0) return -EINVAL;
  auto start = std::make_unique<CloneStart>();
  start->context = parent;
  start->context.uc_mcontext.gregs[REG_RAX] = 0;
  start->context.uc_mcontext.gregs[REG_RSP] = greg_t(stack);
  // The thread pointer it starts with: its own (CLONE_SETTLS), or its parent's in the program.
  std::uint64_t fs = tls;
  if ((flags & CLONE_SETTLS) == 0) {
    const std::uint64_t block = read_base(arch_get_gs);
    fs = block != 0 ? reinterpret_cast<LoopsimThreadBlock*>(block)->program_fs : read_fs();
  }
  start->fs = fs;
  if (flags & CLONE_CHILD_SETTID) start->child_settid = child_tid;
  if (flags & CLONE_CHILD_CLEARTID) start->child_cleartid = child_tid;
  CloneStart* given = start.release();
  return calls::engine_call("clone", [&]() -> long {
    pthread_t os{};
    const long rc = current->create_thread(&os, nullptr, clone_started, given);
    if (rc != 0) {
      delete given;
      return -rc;
    }
    // Its id, as Linux's clone returns it: the thread's CPU-time clock encodes it
    // (MAKE_THREAD_CPUCLOCK: the id's complement, shifted by 3).
    clockid_t clock{};
    pid_t tid = 0;
    if (pthread_getcpuclockid(os, &clock) == 0) tid = pid_t(~(long(clock) >> 3));
    if (flags & CLONE_PARENT_SETTID) put_thread_word(parent_tid, tid);
    current->switch_point();
    return tid;
  });
}

bool exit_thread() {
  if (clone_exit == nullptr) return false;
  if (int* word = std::exchange(clone_cleartid, nullptr)) {
    // As Linux at a thread's exit: the word cleared, and one waiter woken (a join's).
    put_thread_word(word, 0);
    const long wake[6] = {reinterpret_cast<long>(word), FUTEX_WAKE, 1, 0, 0, 0};
    calls::futex_call(wake);
  }
  static const stack_t none{nullptr, SS_DISABLE, 0};
  LOOPSIM_REAL(sigaltstack)(&none, nullptr);
  siglongjmp(*clone_exit, 1);
}

int install_action(int signal, const struct sigaction* action, struct sigaction* old, bool seams) {
  if (!own_thread_pointer || signal <= 0 || signal > 64) return LOOPSIM_REAL(sigaction)(signal, action, old);
  auto& table = seams ? loopsim_seam_handlers : loopsim_program_handlers;
  const auto entry = seams ? loopsim_seam_signal_entry : loopsim_program_signal_entry;
  struct sigaction given{};
  if (action != nullptr) {
    given = *action;
    const bool handler = action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
    if (handler) {
      table[signal] = action->sa_sigaction;
      given.sa_sigaction = entry;  // called with three arguments either way, as x86-64's kernel calls
    }
  }
  struct sigaction before{};
  const int rc = LOOPSIM_REAL(sigaction)(signal, action != nullptr ? &given : nullptr, &before);
  if (rc == 0 && old != nullptr) {
    *old = before;
    if (before.sa_sigaction == loopsim_program_signal_entry || before.sa_sigaction == loopsim_seam_signal_entry) {
      const auto& theirs = before.sa_sigaction == loopsim_program_signal_entry ? loopsim_program_handlers : loopsim_seam_handlers;
      old->sa_sigaction = theirs[signal];
    }
  }
  return rc;
}

void run_handler(void (*handler)(int, siginfo_t*, void*), int signal, siginfo_t* info, void* context) {
  if (!own_thread_pointer) return handler(signal, info, context);
  loopsim_call_program(signal, info, context, handler);
}

}  // namespace loopsim::posix
