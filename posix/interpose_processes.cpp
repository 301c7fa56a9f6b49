// The calls that start, replace and wait for processes (posix/processes.cpp says how a child
// runs): fork, vfork, posix_spawn, system, popen and pclose, the exec family, and the waits.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"


using loopsim::posix::current;
using loopsim::posix::real;
using namespace loopsim::posix::calls;

extern char** environ;

namespace {

// Starts a child on the calling thread: 0 in the child; in the parent, once the child has
// ended, its pid (or -1 and errno).
pid_t start_child(const char* call) {
  const long pid = current->fork_process();
  if (pid <= 0) return pid_t(result(pid));
  return pid_t(served(call, [&] { return current->await_child(pid_t(pid), call); }));
}

// The environment an exec passes on. A child's exec: its simulated descriptors made real, or
// refused, and `envp` as it is. The target's own: the new program runs the simulation in its
// place if nothing the simulation saw has happened yet (a wrapper script: pyenv's shims, a
// `sh -c 'exec ...'`), with what the seam needs added to `envp`; otherwise it is refused.
struct Environment {
  std::vector<std::string> added;
  std::vector<char*> entries;
};

char* const* exec_environment(const char* call, char* const* envp, Environment& made) {
  // The new program reads the counter as it starts (glibc's loader), with no handler to answer.
  loopsim::posix::untrap_tsc();
  if (current == nullptr) return envp;
  if (current->forked()) {
    current->before_exec(call);
    return envp;
  }
  if (!making()) return envp;
  if (!current->pristine()) {
    current->refuse(call, -1,
                    "the target replaces its own program after the simulation saw it act (a simulated descriptor, a "
                    "thread, a choice or virtual time passed); only one replaced at once, as a wrapper script's exec, "
                    "runs on (docs/targets.md)");
  }
  made.added = loopsim::posix::handover_environment();
  if (made.added.empty()) current->refuse(call, -1, "the seam could not hand the run over to the new program");
  for (char* const* entry = envp; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with("LD_PRELOAD=") || text.starts_with("LOOPSIM_SEAM_")) continue;
    made.entries.push_back(*entry);
  }
  for (std::string& entry : made.added) made.entries.push_back(entry.data());
  made.entries.push_back(nullptr);
  return made.entries.data();
}

[[noreturn]] void run_shell(const char* call, const char* command) {
  current->before_exec(call);
  char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command), nullptr};
  LOOPSIM_REAL(execv)("/bin/sh", argv);
  LOOPSIM_REAL(_exit)(127);
  __builtin_unreachable();
}

// The child's wait status, as its own: exit with the same status, or die of the same signal.
[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    LOOPSIM_REAL(signal)(signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    LOOPSIM_REAL(sigprocmask)(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), signal);
  }
  LOOPSIM_REAL(_exit)(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
  __builtin_unreachable();
}

using Spawn = int(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*, char* const[],
                  char* const[]);

// posix_spawn: a child (served, as fork's) that spawns the program with the real posix_spawn,
// its file actions and attributes applied as glibc applies them, and ends as it ends. An error
// of the real spawn is the call's, and no child is left to wait for.
template <Spawn* (*real_spawn)()>
int spawn(const char* call, pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
          const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  const long child = current->fork_process();
  if (child < 0) return int(-child);
  if (child == 0) {
    current->before_exec(call);
    pid_t program = 0;
    const int error = real_spawn()(&program, path, actions, attributes, argv, envp);
    if (error != 0) current->spawn_failed(error);
    int status = 0;
    while (LOOPSIM_REAL(waitpid)(program, &status, 0) < 0 && errno == EINTR) {
    }
    end_as(status);
  }
  const int saved = errno;
  const long made = served(call, [&] { return current->await_child(pid_t(child), call); });
  if (made < 0) {
    const int error = errno;
    errno = saved;
    return error;
  }
  if (pid != nullptr) *pid = pid_t(made);
  return 0;
}

Spawn* real_posix_spawn() { return LOOPSIM_REAL(posix_spawn); }
Spawn* real_posix_spawnp() { return LOOPSIM_REAL(posix_spawnp); }

// popen's streams, with their children.
std::map<FILE*, pid_t>& popened() {
  static std::map<FILE*, pid_t> streams;
  return streams;
}

// The wait calls' part: the child's pid and status, or -1 and errno.
pid_t reaped(const char* call, pid_t pid, int* status, bool keep) {
  int found = 0;
  const pid_t child = pid_t(served(call, [&] { return current->reap(pid, found, keep); }));
  if (child > 0 && status != nullptr) *status = found;
  return child;
}

}  // namespace

SEAM_EXPORT pid_t fork() noexcept {
  if (making()) return start_child(__func__);
  return LOOPSIM_REAL(fork)();
}

SEAM_EXPORT pid_t _Fork() noexcept {
  if (making()) return start_child(__func__);
  return LOOPSIM_REAL(_Fork)();
}

// vfork's child borrows its parent's stack, and returning into a frame the child has left would
// break the parent: the seam forks instead (a vfork child may only exec or _exit, which a forked
// child does alike). The real vfork is never called.
SEAM_EXPORT pid_t vfork() noexcept {
  if (making()) return start_child(__func__);
  return LOOPSIM_REAL(fork)();
}

// clone without CLONE_THREAD makes a process that runs a function of the program's on a stack
// of its choosing: refused by name, as its syscall forms are.
SEAM_EXPORT int clone(int (*body)(void*), void* stack, int flags, void* argument, ...) noexcept {
  if (making() && (unsigned(flags) & CLONE_THREAD) == 0) {
    current->refuse(__func__, -1,
                    "the target starts a process the seam cannot run to its end (it serves fork, vfork, posix_spawn, "
                    "system and popen; docs/targets.md)");
  }
  va_list ap;
  va_start(ap, argument);
  void* parent_tid = va_arg(ap, void*);
  void* tls = va_arg(ap, void*);
  void* child_tid = va_arg(ap, void*);
  va_end(ap);
  return LOOPSIM_REAL(clone)(body, stack, flags, argument, parent_tid, tls, child_tid);
}

SEAM_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                            const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  if (making()) return spawn<real_posix_spawn>(__func__, pid, path, actions, attributes, argv, envp);
  return real_posix_spawn()(pid, path, actions, attributes, argv, envp);
}

SEAM_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  if (making()) return spawn<real_posix_spawnp>(__func__, pid, file, actions, attributes, argv, envp);
  return real_posix_spawnp()(pid, file, actions, attributes, argv, envp);
}

// system(3): /bin/sh -c, waited for. With SIGCHLD ignored Linux reaps the child itself, and
// glibc's system then fails with ECHILD, as here.
SEAM_EXPORT int system(const char* command) {
  // system(NULL) asks whether a shell exists, and starts nothing.
  if (!making() || command == nullptr) return LOOPSIM_REAL(system)(command);
  const pid_t child = start_child(__func__);
  if (child == 0) run_shell("system", command);
  if (child < 0) return -1;
  int status = 0;
  return reaped(__func__, child, &status, false) < 0 ? -1 : status;
}

// popen(3) for reading: the command's output is all there as popen returns (its child ran to its
// end), read from a real buffer. For writing it is refused by name: the child would read what the
// program writes after popen returns.
SEAM_EXPORT FILE* popen(const char* command, const char* mode) {
  if (!making() || command == nullptr || mode == nullptr) return LOOPSIM_REAL(popen)(command, mode);
  if (mode[0] != 'r') {
    current->refuse("popen (for writing)", -1,
                    "its child would read what the program writes after popen returns; the seam runs a child to its "
                    "end before the call returns (docs/targets.md)");
  }
  const int output = ::memfd_create("loopsim-popen", MFD_CLOEXEC);
  if (output < 0) return nullptr;
  const pid_t child = start_child(__func__);
  if (child == 0) {
    if (owned(STDOUT_FILENO)) current->child_close(STDOUT_FILENO);
    LOOPSIM_REAL(dup2)(output, STDOUT_FILENO);
    run_shell("popen", command);
  }
  if (child < 0) {
    LOOPSIM_REAL(close)(output);
    return nullptr;
  }
  ::lseek(output, 0, SEEK_SET);
  if (std::strchr(mode, 'e') == nullptr) LOOPSIM_REAL(fcntl)(output, F_SETFD, 0);
  FILE* stream = ::fdopen(output, "r");
  if (stream == nullptr) {
    LOOPSIM_REAL(close)(output);
    return nullptr;
  }
  popened()[stream] = child;
  return stream;
}

SEAM_EXPORT int pclose(FILE* stream) {
  auto it = popened().find(stream);
  if (it == popened().end()) return LOOPSIM_REAL(pclose)(stream);
  const pid_t child = it->second;
  popened().erase(it);
  std::fclose(stream);
  int status = 0;
  return reaped(__func__, child, &status, false) < 0 ? -1 : status;
}

// ---- the exec family: a child's is served, and the target's own at its start ----

using Execve = int(const char*, char* const[], char* const[]);

SEAM_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  Environment made;
  return LOOPSIM_REAL(execve)(path, argv, exec_environment(__func__, envp, made));
}

SEAM_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  Environment made;
  return LOOPSIM_REAL(execve)(path, argv, exec_environment(__func__, environ, made));
}

SEAM_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  Environment made;
  return LOOPSIM_REAL(execvpe)(file, argv, exec_environment(__func__, environ, made));
}

SEAM_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  Environment made;
  return LOOPSIM_REAL(execvpe)(file, argv, exec_environment(__func__, envp, made));
}

SEAM_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  Environment made;
  return LOOPSIM_REAL(fexecve)(fd, argv, exec_environment(__func__, envp, made));
}

namespace {
// execl's arguments, up to its null, as an argv; `envp` takes what follows the null (execle).
std::vector<char*> arguments(const char* first, va_list ap, char* const** envp = nullptr) {
  std::vector<char*> argv{const_cast<char*>(first)};
  while (argv.back() != nullptr) argv.push_back(va_arg(ap, char*));
  if (envp != nullptr) *envp = va_arg(ap, char* const*);
  return argv;
}
}  // namespace

SEAM_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = arguments(arg, ap);
  va_end(ap);
  Environment made;
  return LOOPSIM_REAL(execve)(path, argv.data(), exec_environment(__func__, environ, made));
}

SEAM_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = arguments(arg, ap);
  va_end(ap);
  Environment made;
  return LOOPSIM_REAL(execvpe)(file, argv.data(), exec_environment(__func__, environ, made));
}

SEAM_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  char* const* envp = nullptr;
  std::vector<char*> argv = arguments(arg, ap, &envp);
  va_end(ap);
  Environment made;
  return LOOPSIM_REAL(execve)(path, argv.data(), exec_environment(__func__, envp, made));
}

// ---- waits: every child ended before its fork returned ----

SEAM_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  if (making()) return reaped(__func__, pid, status, false);
  return LOOPSIM_REAL(waitpid)(pid, status, options);
}

// wait and wait3 are waitpid and wait4 of any child, as glibc makes them.
SEAM_EXPORT pid_t wait(int* status) { return waitpid(-1, status, 0); }

SEAM_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) noexcept {
  if (making()) {
    if (usage != nullptr) std::memset(usage, 0, sizeof *usage);
    return reaped(__func__, pid, status, false);
  }
  return LOOPSIM_REAL(wait4)(pid, status, options, usage);
}

SEAM_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) noexcept {
  return wait4(-1, status, options, usage);
}

SEAM_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  if (!making()) return LOOPSIM_REAL(waitid)(type, id, info, options);
  if ((options & (WEXITED | WSTOPPED | WCONTINUED)) == 0) return int(result(-EINVAL));
  if ((options & WEXITED) == 0) return int(result(-ECHILD));  // no child ever stops or continues
  int status = 0;
  const pid_t child = reaped(__func__, type == P_PID ? pid_t(id) : -1, &status, (options & WNOWAIT) != 0);
  if (child < 0) return -1;
  if (info != nullptr) {
    std::memset(info, 0, sizeof *info);
    info->si_signo = SIGCHLD;
    info->si_pid = child;
    info->si_uid = ::getuid();
    info->si_code = WIFEXITED(status) ? CLD_EXITED : WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
    info->si_status = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
  }
  return 0;
}

// ---- credentials: Linux clears PR_SET_PDEATHSIG when they change ----

// A server started as root switches to its user (lighttpd's server.username, nginx's user), and
// Linux then forgets that the process was to die with loopsim: armed again after each change.
namespace {
int rearmed(int rc) {
  if (rc == 0 && current != nullptr && !current->forked()) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return rc;
}
}  // namespace

SEAM_EXPORT int setuid(uid_t uid) noexcept { return rearmed(LOOPSIM_REAL(setuid)(uid)); }
SEAM_EXPORT int setgid(gid_t gid) noexcept { return rearmed(LOOPSIM_REAL(setgid)(gid)); }
SEAM_EXPORT int seteuid(uid_t uid) noexcept { return rearmed(LOOPSIM_REAL(seteuid)(uid)); }
SEAM_EXPORT int setegid(gid_t gid) noexcept { return rearmed(LOOPSIM_REAL(setegid)(gid)); }
SEAM_EXPORT int setreuid(uid_t real_id, uid_t effective) noexcept {
  return rearmed(LOOPSIM_REAL(setreuid)(real_id, effective));
}
SEAM_EXPORT int setregid(gid_t real_id, gid_t effective) noexcept {
  return rearmed(LOOPSIM_REAL(setregid)(real_id, effective));
}
SEAM_EXPORT int setresuid(uid_t real_id, uid_t effective, uid_t saved) noexcept {
  return rearmed(LOOPSIM_REAL(setresuid)(real_id, effective, saved));
}
SEAM_EXPORT int setresgid(gid_t real_id, gid_t effective, gid_t saved) noexcept {
  return rearmed(LOOPSIM_REAL(setresgid)(real_id, effective, saved));
}
