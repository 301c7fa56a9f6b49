// liveclient: the load clients of bench/live_reliability.sh, spoken to 127.0.0.1 only.
//
//   liveclient SUBCOMMAND --port P [--key value ...]
//
// Subcommands (each prints key=value lines on stdout, one figure a line, for the script):
//   freeport                         a port nobody listens on now (bound to 0, then closed)
//   get       --path /fast           one request; exit 0 if answered 2xx
//   slowloris --conns 500 --seconds 15
//             each connection sends one byte of a request head per second, never ending it;
//             counts how many the server closed, and how many are still open once each is
//             --seconds old; meanwhile probes /fast at --probes-at seconds (e.g. "2,5,8")
//   burst     --clients 500 --hold-ms 2500 --timeout-s 10 [--pid PID] [--path /fast] [--stagger-ms 0]
//             every client connects at once, all wait --hold-ms (the server's descriptors run
//             out: the blocked phase, where the server's CPU and open descriptors are
//             sampled), then each sends one `Connection: close` request and waits up to
//             --timeout-s for its answer; no client retries. With --stagger-ms, client i
//             connects i × stagger after the first
//   inflight  --count 20 --path '/slow?ms=2000' --pid PID --signal-after-ms 200
//             --probe-after-ms 100 --wait-s 15
//             [--second-signal-after-ms N]
//             COUNT keep-alive requests at once; SIGTERM to PID once all are written; a new
//             connection after that; waits for the answers and for PID to exit. With
//             --second-signal-after-ms, a second SIGTERM N ms after the first, if PID still runs
//   pipeline  --conns 8 --bytes 104857600 --seconds 20 --pid PID --probes 200
//             CONNS connections write pipelined GET /fast without ever reading, while a
//             further keep-alive client times /fast; samples the server's RSS throughout and
//             2 s after the CONNS connections close. Stops and closes them at once if the
//             server's RSS passes --rss-cap-mib (default 1024), to keep the machine safe from
//             a server that buffers without bound
//   fuzz      --requests 20000 --seed S --conns 64 --seconds 90
//             mutated requests (flipped bytes, cut lines, huge headers, garbage, pipelined
//             mixes), generated from SEED alone, over many connections
//
// Plain POSIX sockets and poll(2), no dependencies: g++ -std=c++17 -O2.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "liveclient: %s\n", why.c_str());
  std::exit(2);
}

struct Args {
  std::map<std::string, std::string> kv;
  Args(int argc, char** argv, int from) {
    for (int i = from; i < argc; ++i) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || i + 1 >= argc) die("expected --key value, got '" + key + "'");
      kv[key.substr(2)] = argv[++i];
    }
  }
  std::string str(const std::string& k, const std::string& def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  long num(const std::string& k, long def) const {
    auto it = kv.find(k);
    if (it == kv.end()) return def;
    char* end = nullptr;
    long v = std::strtol(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end) die("--" + k + " wants a number, not '" + it->second + "'");
    return v;
  }
};

// Raises our own descriptor limit to the hard one: 1000 sockets must fit.
void raise_nofile() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

int connect_nb(int port, int* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    *error = errno;
    close(fd);
    return -1;
  }
  *error = 0;
  return fd;
}

int socket_error(int fd) {
  int e = 0;
  socklen_t l = sizeof e;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) != 0) return errno;
  return e;
}

// The server's /proc figures. A process that has exited (or is a zombie) reads as gone.
bool process_gone(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return true;
  auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) return true;
  char state = line[close_paren + 2];
  return state == 'Z' || state == 'X';
}

long process_ticks(int pid) {  // utime + stime, in clock ticks; -1 if gone
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(line.substr(close_paren + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (rest >> field); ++i) {  // fields 3.. after the command
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return utime + stime;
}

long status_kib(int pid, const char* key) {  // VmRSS/VmHWM from /proc/PID/status; -1 if gone
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  std::string want = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(want, 0) == 0) return std::atol(line.c_str() + want.size());
  }
  return -1;
}

// The server's open sockets (its listener and connections): descriptors it inherited, which
// may sit past its limit, are not counted.
long open_sockets(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  long n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[256];
    ssize_t len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (len > 0 && std::string(target, size_t(len)).rfind("socket:", 0) == 0) ++n;
  }
  closedir(d);
  return n;
}

bool iequal_prefix(const std::string& s, size_t at, const char* lower) {
  for (size_t i = 0; lower[i]; ++i) {
    if (at + i >= s.size() || std::tolower(static_cast<unsigned char>(s[at + i])) != lower[i]) return false;
  }
  return true;
}

// The length of the first complete response in `in`: 0 while incomplete, -1 if `in` does not
// start like one. At end of stream a response without Content-Length ends there.
long complete_response(const std::string& in, bool eof, int* status) {
  auto head_end = in.find("\r\n\r\n");
  if (in.size() >= 5 && in.compare(0, 5, "HTTP/") != 0) return -1;
  if (head_end == std::string::npos) return eof && !in.empty() ? -1 : 0;
  auto sp = in.find(' ');
  *status = sp < head_end ? std::atoi(in.c_str() + sp + 1) : 0;
  long length = -1;
  for (size_t at = in.find("\r\n"); at < head_end; at = in.find("\r\n", at + 2)) {
    if (iequal_prefix(in, at + 2, "content-length:")) length = std::atol(in.c_str() + at + 2 + 15);
  }
  if (length < 0) return eof ? long(in.size()) : 0;
  size_t total = head_end + 4 + size_t(length);
  return in.size() >= total ? long(total) : 0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t i = size_t(p / 100.0 * double(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// One request on its own connection, driven by poll: connect, write, read the answer.
struct Exchange {
  int fd = -1;
  std::string out;
  size_t sent = 0;
  std::string in;
  bool connected = false;
  bool may_send = true;        // false holds the request back (burst's hold)
  bool linger = false;         // after the answer, keep the socket and watch for the close
  bool done = false;           // answered or failed: outcome says which
  bool watching = false;       // answered, socket kept open until the server closes it
  std::string outcome;         // answered, refused, reset, eof, timeout, connect-timeout, error
  int status = 0;
  double t_start = 0, t_connected = 0, t_done = 0, t_server_close = 0;
  double deadline = 1e300;

  void start(int port, double now) {
    t_start = now;
    int err = 0;
    fd = connect_nb(port, &err);
    if (fd < 0) finish(err == ECONNREFUSED ? "refused" : std::string("error-") + std::strerror(err), now);
  }
  void finish(const std::string& what, double now) {
    if (!done) {
      done = true;
      outcome = what;
      t_done = now;
    }
    if (what == "answered" && linger && fd >= 0) {
      watching = true;
      return;
    }
    drop();
  }
  void drop() {
    if (fd >= 0) close(fd);
    fd = -1;
    watching = false;
  }
  bool active() const { return fd >= 0; }
  short events() const {
    if (!connected) return POLLOUT;
    short e = POLLIN;
    if (!done && may_send && sent < out.size()) e |= POLLOUT;
    return e;
  }
  void on_event(short revents, double now) {
    if (!connected) {
      int err = socket_error(fd);
      if (err) {
        finish(err == ECONNREFUSED ? "refused" : err == ECONNRESET ? "reset" : err == ETIMEDOUT ? "connect-timeout"
                                                                             : std::string("error-") + std::strerror(err),
               now);
        return;
      }
      if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return;
      connected = true;
      t_connected = now;
    }
    if (!done && may_send && sent < out.size() && (revents & POLLOUT)) {
      ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += size_t(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        finish(errno == EPIPE || errno == ECONNRESET ? "reset" : std::string("error-") + std::strerror(errno), now);
        return;
      }
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
          if (!watching) in.append(buf, size_t(n));
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        // End of stream or an error: the server closed.
        if (watching) {
          t_server_close = now;
          drop();
          return;
        }
        bool eof = n == 0;
        long len = complete_response(in, true, &status);
        if (len > 0) finish("answered", now);
        else finish(eof ? "eof" : errno == ECONNRESET ? "reset" : std::string("error-") + std::strerror(errno), now);
        if (watching) {  // answered at the close itself
          t_server_close = now;
          drop();
        }
        return;
      }
      if (!done) {
        long len = complete_response(in, false, &status);
        if (len > 0) finish("answered", now);
        else if (len < 0) finish("garbled", now);
      }
    }
  }
  void check_deadline(double now) {
    if (!done && now >= deadline) finish(connected ? "timeout" : "connect-timeout", now);
  }
};

// One poll over every active exchange, then their events and deadlines.
void step(std::vector<Exchange*>& xs, int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Exchange*> owners;
  for (Exchange* x : xs) {
    if (!x->active()) continue;
    fds.push_back(pollfd{x->fd, x->events(), 0});
    owners.push_back(x);
  }
  if (fds.empty()) {
    if (timeout_ms > 0) usleep(useconds_t(timeout_ms) * 1000);
  } else {
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) die(std::string("poll: ") + std::strerror(errno));
  }
  double now = now_s();
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents) owners[i]->on_event(fds[i].revents, now);
  }
  for (Exchange* x : xs) x->check_deadline(now);
}

std::string request(const std::string& path, bool close_it) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + (close_it ? "Connection: close\r\n" : "") + "\r\n";
}

void print_ms(const char* key, double seconds) { std::printf("%s=%.2f\n", key, seconds * 1000.0); }

// ---------------------------------------------------------------------------------------------

int cmd_freeport() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind");
  socklen_t l = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  std::printf("%d\n", ntohs(a.sin_port));
  close(fd);
  return 0;
}

int cmd_get(const Args& args) {
  int port = int(args.num("port", 0));
  Exchange x;
  x.out = request(args.str("path", "/fast"), args.str("close", "1") == "1");
  double t0 = now_s();
  x.deadline = t0 + double(args.num("timeout-ms", 2000)) / 1000.0;
  x.start(port, t0);
  std::vector<Exchange*> xs{&x};
  while (!x.done) step(xs, 10);
  std::printf("outcome=%s\nstatus=%d\n", x.outcome.c_str(), x.status);
  print_ms("ms", x.t_done - t0);
  return x.outcome == "answered" && x.status >= 200 && x.status < 300 ? 0 : 1;
}

// --conns N: N keep-alive connections, each sends GET /fast and waits up to --timeout-ms for its
// answer, all held open until every one has answered or timed out: how many the server holds.
int cmd_hold(const Args& args) {
  const int port = int(args.num("port", 0));
  const int conns = int(args.num("conns", 32));
  const double deadline = now_s() + double(args.num("timeout-ms", 3000)) / 1000.0;
  std::vector<int> fds;
  const std::string ask = request("/fast", false);
  for (int i = 0; i < conns; ++i) {
    int err = 0;
    int fd = connect_nb(port, &err);
    if (fd < 0) continue;
    pollfd w{fd, POLLOUT, 0};
    poll(&w, 1, 1000);
    if (send(fd, ask.data(), ask.size(), MSG_NOSIGNAL) != ssize_t(ask.size())) {
      close(fd);
      continue;
    }
    fds.push_back(fd);
  }
  std::vector<bool> answered(fds.size(), false);
  int held = 0;
  char buffer[4096];
  while (held < int(fds.size()) && now_s() < deadline) {
    std::vector<pollfd> ready;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!answered[i]) ready.push_back(pollfd{fds[i], POLLIN, 0});
    }
    if (poll(ready.data(), ready.size(), 20) <= 0) continue;
    for (const pollfd& p : ready) {
      if (!(p.revents & POLLIN)) continue;
      std::size_t i = std::size_t(std::find(fds.begin(), fds.end(), p.fd) - fds.begin());
      ssize_t n = recv(p.fd, buffer, sizeof buffer, 0);
      answered[i] = true;
      if (n > 12 && std::strncmp(buffer, "HTTP/1.1 200", 12) == 0) ++held;
    }
  }
  for (int fd : fds) close(fd);
  std::printf("asked=%d\nconnected=%zu\nheld=%d\n", conns, fds.size(), held);
  return 0;
}

// --paths A,B,...: one keep-alive connection sends every request at once, then reads answers
// (framed by Content-Length) until all are in, the server closes, or --timeout-ms passes.
int cmd_pipelined(const Args& args) {
  const int port = int(args.num("port", 0));
  std::vector<std::string> paths;
  std::stringstream list(args.str("paths", "/fast"));
  for (std::string item; std::getline(list, item, ',');) paths.push_back(item);
  int err = 0;
  int fd = connect_nb(port, &err);
  if (fd < 0) die(std::string("connect: ") + std::strerror(err));
  pollfd ready{fd, POLLOUT, 0};
  poll(&ready, 1, 2000);
  std::string out;
  for (const std::string& path : paths) out += request(path, false);
  const double t0 = now_s(), deadline = t0 + double(args.num("timeout-ms", 5000)) / 1000.0;
  size_t sent = 0, answered = 0;
  std::string in;
  char buffer[1 << 16];
  while (answered < paths.size() && now_s() < deadline) {
    ready = pollfd{fd, short(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    if (poll(&ready, 1, 20) <= 0) continue;
    if (sent < out.size() && (ready.revents & POLLOUT)) {
      ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += size_t(n);
    }
    if (!(ready.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    in.append(buffer, size_t(n));
    for (;;) {  // whole answers off the front; a body is counted, and dropped once in
      size_t head = in.find("\r\n\r\n");
      if (head == std::string::npos) break;
      size_t length = 0, at = in.find("Content-Length: ");
      if (at != std::string::npos && at < head) length = size_t(std::strtoull(in.c_str() + at + 16, nullptr, 10));
      if (in.size() < head + 4 + length) break;
      in.erase(0, head + 4 + length);
      ++answered;
    }
  }
  close(fd);
  std::printf("asked=%zu\nanswered=%zu\n", paths.size(), answered);
  print_ms("ms", now_s() - t0);
  return answered == paths.size() ? 0 : 1;
}

int cmd_slowloris(const Args& args) {
  const int port = int(args.num("port", 0));
  const int conns = int(args.num("conns", 500));
  const double age = double(args.num("seconds", 15));
  std::vector<double> probe_at;
  {
    std::stringstream ss(args.str("probes-at", "2,5,8"));
    std::string item;
    while (std::getline(ss, item, ',')) probe_at.push_back(std::atof(item.c_str()));
  }
  // A head that never ends: the request line, then one header whose value goes on forever.
  const std::string prefix = "GET /fast HTTP/1.1\r\nHost: x\r\nX-Slowloris: ";
  struct Slow {
    int fd = -1;
    bool connected = false, closed = false, failed = false, got_bytes = false;
    double t_start = 0, t_connected = 0, t_closed = 0, next_send = 0;
    size_t bytes = 0;
  };
  std::vector<Slow> s(static_cast<size_t>(conns));
  const double t0 = now_s();
  // Connected in batches of 50, 20 ms apart: 500 SYNs at once would overflow a backlog of 128
  // and leave some connections to the kernel's SYN retries, seconds later.
  int started = 0;
  std::vector<Exchange> probes(probe_at.size());
  size_t next_probe = 0;
  const double hard_end = t0 + age + 10.0;
  for (;;) {
    double now = now_s();
    while (started < conns && now >= t0 + 0.02 * (started / 50)) {
      Slow& c = s[size_t(started++)];
      int err = 0;
      c.t_start = now;
      c.fd = connect_nb(port, &err);
      if (c.fd < 0) c.failed = true;
    }
    if (next_probe < probe_at.size() && now >= t0 + probe_at[next_probe]) {
      Exchange& p = probes[next_probe++];
      p.out = request("/fast", true);
      p.deadline = now + 2.0;
      p.start(port, now);
    }
    // Finished when every connection is closed, failed, or `age` seconds past its connect.
    bool all_old = started == conns;
    for (const Slow& c : s) {
      if (!c.closed && !c.failed && (!c.connected || now < c.t_connected + age)) all_old = false;
    }
    bool probes_done = next_probe == probe_at.size() &&
                       std::all_of(probes.begin(), probes.end(), [](const Exchange& p) { return p.done; });
    if ((all_old && probes_done) || now > hard_end) break;

    std::vector<pollfd> fds;
    std::vector<Slow*> owners;
    double wake = now + 0.05;
    for (Slow& c : s) {
      if (c.fd < 0 || c.closed || c.failed) continue;
      short e = c.connected ? short(POLLIN | POLLRDHUP) : short(POLLOUT);
      fds.push_back(pollfd{c.fd, e, 0});
      owners.push_back(&c);
      if (c.connected) wake = std::min(wake, c.next_send);
    }
    std::vector<Exchange*> px;
    for (Exchange& p : probes) {
      if (p.active()) {
        fds.push_back(pollfd{p.fd, p.events(), 0});
        px.push_back(&p);
        owners.push_back(nullptr);
      }
    }
    int timeout = std::max(0, int((wake - now) * 1000.0));
    poll(fds.data(), fds.size(), timeout);
    now = now_s();
    size_t probe_i = 0;
    for (size_t i = 0; i < fds.size(); ++i) {
      Slow* c = owners[i];
      if (!c) {
        if (fds[i].revents) px[probe_i]->on_event(fds[i].revents, now);
        ++probe_i;
        continue;
      }
      if (!fds[i].revents) continue;
      if (!c->connected) {
        if (socket_error(c->fd)) {
          c->failed = true;
          close(c->fd);
          c->fd = -1;
          continue;
        }
        c->connected = true;
        c->t_connected = now;
        c->next_send = now;
        continue;
      }
      char buf[4096];
      for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n > 0) {
          c->got_bytes = true;  // e.g. a 408 before the close
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        c->closed = true;  // 0 (FIN) or ECONNRESET: the server let it go
        c->t_closed = now;
        close(c->fd);
        c->fd = -1;
        break;
      }
    }
    for (Exchange& p : probes) p.check_deadline(now);
    for (Slow& c : s) {
      if (c.fd < 0 || !c.connected || c.closed || now < c.next_send) continue;
      char byte = c.bytes < prefix.size() ? prefix[c.bytes] : 'a';
      ssize_t n = send(c.fd, &byte, 1, MSG_NOSIGNAL);
      if (n == 1) {
        ++c.bytes;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        c.closed = true;
        c.t_closed = now;
        close(c.fd);
        c.fd = -1;
        continue;
      }
      c.next_send += 1.0;
    }
  }
  int connected = 0, failed = 0, closed = 0, open = 0, answered_before_close = 0;
  std::vector<double> close_after;
  for (Slow& c : s) {
    if (c.failed) ++failed;
    if (c.connected) ++connected;
    if (c.closed) {
      ++closed;
      close_after.push_back(c.t_closed - c.t_connected);
      if (c.got_bytes) ++answered_before_close;
    } else if (c.connected) {
      ++open;
    }
    if (c.fd >= 0) close(c.fd);
  }
  int probes_ok = 0;
  double probe_max = 0;
  for (Exchange& p : probes) {
    if (p.outcome == "answered" && p.status == 200) ++probes_ok;
    probe_max = std::max(probe_max, p.t_done - p.t_start);
    p.drop();
  }
  std::printf("conns=%d\nconnected=%d\nconnect_failed=%d\nclosed_by_server=%d\nclosed_with_bytes=%d\nstill_open=%d\n",
              conns, connected, failed, closed, answered_before_close, open);
  std::printf("close_after_s_min=%.2f\nclose_after_s_p50=%.2f\nclose_after_s_max=%.2f\n",
              close_after.empty() ? -1.0 : *std::min_element(close_after.begin(), close_after.end()),
              percentile(close_after, 50),
              close_after.empty() ? -1.0 : *std::max_element(close_after.begin(), close_after.end()));
  std::printf("probes=%zu\nprobes_ok=%d\n", probes.size(), probes_ok);
  print_ms("probe_max_ms", probe_max);
  std::printf("elapsed_s=%.1f\n", now_s() - t0);
  return 0;
}

int cmd_burst(const Args& args) {
  const int port = int(args.num("port", 0));
  const int clients = int(args.num("clients", 500));
  const double hold = double(args.num("hold-ms", 2500)) / 1000.0;
  const double timeout = double(args.num("timeout-s", 10));
  const int pid = int(args.num("pid", 0));
  const std::string path = args.str("path", "/fast");
  const long tck = sysconf(_SC_CLK_TCK);
  std::vector<Exchange> xs(static_cast<size_t>(clients));
  std::vector<Exchange*> ptrs;
  // With --stagger-ms, client i connects i × stagger after the first.
  const double stagger = double(args.num("stagger-ms", 0)) / 1000.0;
  const double t0 = now_s();
  std::size_t started = 0;
  auto start_due = [&](double now) {
    for (; started < xs.size() && now >= t0 + double(started) * stagger; ++started) xs[started].start(port, now);
  };
  for (Exchange& x : xs) {
    x.out = request(path, true);
    x.may_send = false;
    ptrs.push_back(&x);
  }
  start_due(t0);
  // The blocked phase: sampled from 1.0 s to 2.0 s after the connects, once the server has
  // taken what its descriptors allow.
  const double window = std::min(1.0, hold * 0.4), sample_a = t0 + window, sample_b = sample_a + window;
  long ticks_a = -1, ticks_b = -1, fds_blocked = -1;
  double at_a = 0, at_b = 0;
  bool released = false;
  double t_release = 0;
  int connected_at_release = 0;
  for (;;) {
    double now = now_s();
    if (pid > 0 && ticks_a < 0 && now >= sample_a) {
      ticks_a = process_ticks(pid);
      at_a = now;
    }
    if (pid > 0 && ticks_b < 0 && now >= sample_b) {
      ticks_b = process_ticks(pid);
      at_b = now;
      fds_blocked = open_sockets(pid);
    }
    if (!released && now >= t0 + hold) {
      released = true;
      t_release = now;
      for (Exchange& x : xs) {
        x.may_send = true;
        x.deadline = t_release + timeout;
        if (x.connected) ++connected_at_release;
      }
    }
    bool all_done = std::all_of(xs.begin(), xs.end(), [](const Exchange& x) { return x.done; });
    if (released && all_done) break;
    step(ptrs, 5);
    start_due(now_s());
  }
  std::map<std::string, int> outcomes;
  int answered_2xx = 0;
  double last = 0;
  std::vector<double> answer_times;
  for (Exchange& x : xs) {
    ++outcomes[x.outcome];
    if (x.outcome == "answered") {
      if (x.status >= 200 && x.status < 300) ++answered_2xx;
      last = std::max(last, x.t_done - t_release);
      answer_times.push_back(x.t_done - t_release);
    }
    x.drop();
  }
  std::printf("clients=%d\nconnected_at_release=%d\nanswered_2xx=%d\n", clients, connected_at_release, answered_2xx);
  for (auto& [k, v] : outcomes) std::printf("outcome_%s=%d\n", k.c_str(), v);
  if (pid > 0 && ticks_a >= 0 && ticks_b >= 0 && at_b > at_a) {
    std::printf("cpu_pct_blocked=%.1f\n", 100.0 * double(ticks_b - ticks_a) / double(tck) / (at_b - at_a));
    std::printf("server_sockets_blocked=%ld\n", fds_blocked);
  }
  print_ms("recovery_ms", last);
  print_ms("answer_p50_ms", std::max(0.0, percentile(answer_times, 50)));
  return 0;
}

int cmd_inflight(const Args& args) {
  const int port = int(args.num("port", 0));
  const int count = int(args.num("count", 20));
  const int pid = int(args.num("pid", 0));
  const std::string path = args.str("path", "/slow?ms=2000");
  const double signal_after = double(args.num("signal-after-ms", 200)) / 1000.0;
  const double probe_after = double(args.num("probe-after-ms", 100)) / 1000.0;
  const double wait = double(args.num("wait-s", 15));
  const double second_after = double(args.num("second-signal-after-ms", -1)) / 1000.0;
  if (pid <= 0) die("inflight needs --pid");
  std::vector<Exchange> xs(static_cast<size_t>(count));
  Exchange probe;
  std::vector<Exchange*> ptrs;
  const double t0 = now_s();
  for (Exchange& x : xs) {
    x.out = request(path, false);  // keep-alive: the drain has to close them once answered
    x.linger = true;
    x.start(port, t0);
    ptrs.push_back(&x);
  }
  ptrs.push_back(&probe);
  double t_sent = 0, t_signal = 0, t_second = 0, t_exit = 0;
  bool probe_started = false;
  for (;;) {
    double now = now_s();
    if (t_sent == 0 && std::all_of(xs.begin(), xs.end(), [](const Exchange& x) { return x.done || x.sent == x.out.size(); }))
      t_sent = now;
    if (t_sent > 0 && t_signal == 0 && now >= t_sent + signal_after) {
      if (kill(pid, SIGTERM) != 0) die(std::string("kill: ") + std::strerror(errno));
      t_signal = now;
      for (Exchange& x : xs) x.deadline = t_signal + wait;
    }
    if (t_signal > 0 && !probe_started && now >= t_signal + probe_after) {
      probe_started = true;
      probe.out = request("/fast", true);
      probe.deadline = now + 5.0;
      probe.start(port, now);
    }
    if (t_signal > 0 && t_exit == 0 && process_gone(pid)) t_exit = now;
    if (second_after >= 0 && t_signal > 0 && t_second == 0 && t_exit == 0 && now >= t_signal + second_after) {
      if (kill(pid, SIGTERM) != 0) die(std::string("kill: ") + std::strerror(errno));
      t_second = now;
    }
    bool answers_done = std::all_of(xs.begin(), xs.end(), [](const Exchange& x) { return x.done; });
    if (t_exit > 0 && answers_done && probe_started && probe.done) break;
    if (t_signal > 0 && now > t_signal + wait) break;
    if (t_signal == 0 && now > t0 + 10) die("the requests could not be written within 10 s");
    step(ptrs, 5);
  }
  // Whoever is still watched was answered and left open by a server that has not exited.
  int answered = 0, non200 = 0, closed_after_answer = 0;
  std::map<std::string, int> outcomes;
  for (Exchange& x : xs) {
    ++outcomes[x.outcome.empty() ? "pending" : x.outcome];
    if (x.outcome == "answered") {
      if (x.status == 200) ++answered;
      else ++non200;
      if (x.t_server_close > 0) ++closed_after_answer;
    }
    x.drop();
  }
  std::string probe_result = probe.outcome.empty() ? "pending" : probe.outcome;
  if (probe_result == "answered") probe_result += "-" + std::to_string(probe.status);
  probe.drop();
  std::printf("count=%d\nanswered_200=%d\nanswered_other=%d\nclosed_after_answer=%d\n", count, answered, non200,
              closed_after_answer);
  for (auto& [k, v] : outcomes) std::printf("outcome_%s=%d\n", k.c_str(), v);
  std::printf("probe=%s\n", probe_result.c_str());
  print_ms("written_ms", t_sent - t0);
  if (t_exit > 0) print_ms("exit_after_signal_ms", t_exit - t_signal);
  else std::printf("exit_after_signal_ms=none\n");
  if (t_second > 0) print_ms("second_signal_after_ms", t_second - t_signal);
  if (t_second > 0 && t_exit > 0) print_ms("exit_after_second_signal_ms", t_exit - t_second);
  return 0;
}

int cmd_pipeline(const Args& args) {
  const int port = int(args.num("port", 0));
  const int conns = int(args.num("conns", 8));
  const long bytes = args.num("bytes", 100L << 20);
  const double seconds = double(args.num("seconds", 20));
  const int pid = int(args.num("pid", 0));
  const int probes_wanted = int(args.num("probes", 200));
  const double probe_gap = double(args.num("probe-gap-ms", 20)) / 1000.0;
  const long rss_cap_kib = args.num("rss-cap-mib", 1024) * 1024;
  if (pid <= 0) die("pipeline needs --pid");
  const std::string one = "GET " + args.str("path", "/fast") + " HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string block;
  while (block.size() < 60000) block += one;  // whole requests only

  const long rss_start = status_kib(pid, "VmRSS");
  long rss_peak = rss_start;
  struct Flood {
    int fd = -1;
    bool connected = false, closed = false;
    long written = 0;
    size_t offset = 0;
  };
  std::vector<Flood> f(static_cast<size_t>(conns));
  const double t0 = now_s();
  for (Flood& c : f) {
    int err = 0;
    c.fd = connect_nb(port, &err);
    if (c.fd < 0) c.closed = true;
  }
  // The probe: one keep-alive connection, one request at a time, `probe_gap` apart.
  std::vector<double> lat;
  int probe_timeouts = 0, probe_failures = 0;
  Exchange probe;
  bool probe_busy = false;
  double next_probe = t0 + 1.0, next_rss = t0;
  bool capped = false;
  int closed_by_server = 0;
  double flood_end = 0;
  for (;;) {
    double now = now_s();
    if (now >= next_rss) {
      long rss = status_kib(pid, "VmRSS");
      if (rss < 0) break;  // the server is gone
      rss_peak = std::max(rss_peak, rss);
      if (rss > rss_cap_kib) capped = true;
      next_rss = now + 0.05;
    }
    bool flooding = false;
    for (Flood& c : f) {
      if (!c.closed && c.written < bytes) flooding = true;
    }
    if ((!flooding || capped || now > t0 + seconds) && flood_end == 0) flood_end = now;
    int probes_done = int(lat.size()) + probe_timeouts + probe_failures;
    if (flood_end > 0 && (probes_done >= probes_wanted || now > t0 + seconds) && !probe_busy) break;
    if (now > t0 + seconds + 3) break;  // a probe stuck past the bound
    if (capped) break;                   // past the cap: close the floods now, not later
    if (!probe_busy && probes_done < probes_wanted && now >= next_probe) {
      probe = Exchange{};
      probe.out = request("/fast", true);
      probe.deadline = now + 2.0;
      probe.start(port, now);
      probe_busy = true;
    }

    std::vector<pollfd> fds;
    std::vector<Flood*> owners;
    for (Flood& c : f) {
      if (c.closed || flood_end > 0 || c.written >= bytes) continue;
      fds.push_back(pollfd{c.fd, short(c.connected ? POLLOUT : POLLOUT), 0});
      owners.push_back(&c);
    }
    if (probe.active()) {
      fds.push_back(pollfd{probe.fd, probe.events(), 0});
      owners.push_back(nullptr);
    }
    poll(fds.data(), fds.size(), 5);
    now = now_s();
    for (size_t i = 0; i < fds.size(); ++i) {
      Flood* c = owners[i];
      if (!c) {
        if (fds[i].revents) probe.on_event(fds[i].revents, now);
        continue;
      }
      if (!fds[i].revents) continue;
      if (!c->connected) {
        if (socket_error(c->fd)) {
          c->closed = true;
          continue;
        }
        c->connected = true;
      }
      for (int k = 0; k < 16 && c->written < bytes; ++k) {
        size_t want = std::min(block.size() - c->offset, size_t(bytes - c->written));
        ssize_t n = send(c->fd, block.data() + c->offset, want, MSG_NOSIGNAL);
        if (n > 0) {
          c->written += n;
          c->offset = (c->offset + size_t(n)) % block.size();
          continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
          c->closed = true;
          ++closed_by_server;
        }
        break;
      }
    }
    probe.check_deadline(now);
    if (probe_busy && probe.done) {
      if (probe.outcome == "answered" && probe.status == 200) lat.push_back(probe.t_done - probe.t_start);
      else if (probe.outcome == "timeout" || probe.outcome == "connect-timeout") ++probe_timeouts;
      else ++probe_failures;
      probe.drop();
      probe_busy = false;
      next_probe = now + probe_gap;
    }
  }
  probe.drop();
  long written = 0;
  for (Flood& c : f) written += c.written;
  long rss_during_end = status_kib(pid, "VmRSS");
  long hwm = status_kib(pid, "VmHWM");
  for (Flood& c : f) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }
  // After the close: the server notices, frees the connections; give it 2 s.
  double t_closed = now_s();
  while (now_s() < t_closed + 2.0) {
    long rss = status_kib(pid, "VmRSS");
    if (rss > 0) rss_peak = std::max(rss_peak, rss);
    usleep(50000);
  }
  long rss_after = status_kib(pid, "VmRSS");
  bool alive = !process_gone(pid);
  std::printf("conns=%d\nwritten_mib=%.1f\nflood_s=%.1f\nclosed_by_server=%d\nrss_capped=%d\n", conns,
              double(written) / 1048576.0, (flood_end > 0 ? flood_end : now_s()) - t0, closed_by_server, capped ? 1 : 0);
  std::printf("rss_start_kib=%ld\nrss_peak_kib=%ld\nvmhwm_kib=%ld\nrss_end_of_flood_kib=%ld\nrss_after_kib=%ld\n", rss_start,
              rss_peak, hwm, rss_during_end, rss_after);
  std::printf("probes_ok=%zu\nprobe_timeouts=%d\nprobe_failures=%d\n", lat.size(), probe_timeouts, probe_failures);
  print_ms("probe_p50_ms", std::max(0.0, percentile(lat, 50)));
  print_ms("probe_p99_ms", std::max(0.0, percentile(lat, 99)));
  std::printf("server_alive=%d\n", alive ? 1 : 0);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// fuzz

struct Fuzzer {
  std::mt19937_64 rng;
  explicit Fuzzer(uint64_t seed) : rng(seed) {}
  uint64_t below(uint64_t n) { return n ? rng() % n : 0; }
  bool chance(int percent) { return int(below(100)) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

  std::string valid() {
    static const std::vector<std::string> methods{"GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"};
    static const std::vector<std::string> paths{"/fast", "/fast", "/hello", "/slow?us=1", "/bytes?n=100", "/bytes?n=0",
                                                "/",     "/missing", "/fast?x=1", "/hello?a=b&c=d", "/slow?ms=0",
                                                "/slow", "/slow?us=x", "/bytes?n=-1", "/bytes"};
    static const std::vector<std::string> versions{"HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"};
    std::string r = pick(methods) + " " + pick(paths) + " " + pick(versions) + "\r\n";
    r += "Host: x\r\n";
    if (chance(20)) r += chance(50) ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
    if (chance(20)) r += "User-Agent: liveclient-fuzz\r\nAccept: */*\r\n";
    if (chance(15)) {
      std::string body(size_t(below(200)), 'B');
      r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      return r;
    }
    return r + "\r\n";
  }

  std::string garbage(size_t n) {
    std::string g(n, '\0');
    for (char& c : g) c = char(below(256));
    return g;
  }

  void mutate(std::string& r) {
    switch (below(14)) {
      case 0: {  // flip bytes
        int k = 1 + int(below(5));
        for (int i = 0; i < k && !r.empty(); ++i) r[below(r.size())] ^= char(1 + below(255));
        break;
      }
      case 1:  // cut anywhere
        r.resize(below(r.size() + 1));
        break;
      case 2: {  // a line ending lost or half-lost
        auto at = r.find("\r\n", below(r.size()));
        if (at == std::string::npos) at = r.find("\r\n");
        if (at != std::string::npos) r.replace(at, 2, chance(50) ? "\n" : (chance(50) ? "\r" : ""));
        break;
      }
      case 3: {  // a huge header, around and far past the head limit
        static const std::vector<size_t> sizes{100, 4000, 8150, 8192, 9000, 65536, 262144};
        auto line = r.find("\r\n");
        if (line != std::string::npos) r.insert(line + 2, "X-Big: " + std::string(pick(sizes), 'b') + "\r\n");
        break;
      }
      case 4: {  // many headers
        auto line = r.find("\r\n");
        std::string many;
        for (uint64_t i = 0, n = 50 + below(2000); i < n; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
        if (line != std::string::npos) r.insert(line + 2, many);
        break;
      }
      case 5:  // garbage instead
        r = garbage(1 + below(4096));
        break;
      case 6:  // garbage inserted
        r.insert(below(r.size() + 1), garbage(1 + below(16)));
        break;
      case 7: {  // Content-Length and Transfer-Encoding games
        static const std::vector<std::string> games{
            "Content-Length: -1\r\n",           "Content-Length: 99999999999999999999\r\n",
            "Content-Length: 10\r\n",           "Content-Length: 5\r\nContent-Length: 6\r\n",
            "Content-Length: 1048577\r\n",      "Content-Length: 1048576\r\n",
            "Transfer-Encoding: chunked\r\n",   "Content-Length: 0x10\r\n",
            "Content-Length:\r\n",              "Content-Length: 3 \r\n"};
        auto line = r.find("\r\n");
        if (line != std::string::npos) r.insert(line + 2, pick(games));
        break;
      }
      case 8:  // a very long target
        r = "GET /" + std::string(size_t(1000 + below(20000)), 'p') + " HTTP/1.1\r\nHost: x\r\n\r\n";
        break;
      case 9: {  // odd spacing and case in the request line
        static const std::vector<std::string> lines{"GET  /fast HTTP/1.1", "GET /fast  HTTP/1.1", "GET\t/fast\tHTTP/1.1",
                                                    "get /fast http/1.1",  "GET /fast HTTP/1.2",  "GET /fast HTTP/2.0",
                                                    "GET fast HTTP/1.1",   "GET /fast",           " GET /fast HTTP/1.1",
                                                    "GET /fast HTTP/1.1 ", "GET * HTTP/1.1",      "GET http://x/fast HTTP/1.1",
                                                    "",                    "G",                   "GET / HTTP/1.1\r\n: empty"};
        auto line = r.find("\r\n");
        r.replace(0, line == std::string::npos ? r.size() : line, pick(lines));
        break;
      }
      case 10:  // NUL and high bytes
        for (int i = 0; i < 3 && !r.empty(); ++i) r[below(r.size())] = chance(50) ? '\0' : char(0x80 + below(128));
        break;
      case 11: {  // header without colon, or with an empty name, or obs-fold
        static const std::vector<std::string> bad{"NoColon\r\n", ": novalue\r\n", " folded: x\r\n", "X y: z\r\n",
                                                  "X-A:\r\n",   "\r\n"};
        auto line = r.find("\r\n");
        if (line != std::string::npos) r.insert(line + 2, pick(bad));
        break;
      }
      case 12:  // only line feeds
        for (size_t at; (at = r.find("\r\n")) != std::string::npos;) r.replace(at, 2, "\n");
        break;
      default:  // duplicated piece
        if (!r.empty()) {
          size_t a = below(r.size()), n = below(r.size() - a + 1);
          r.insert(below(r.size() + 1), r.substr(a, n));
        }
        break;
    }
  }

  std::string one() {
    std::string r = valid();
    if (chance(15)) return r;  // some stay valid, so that the pipelined ones behind get served
    for (int i = 0, k = 1 + int(below(3)); i < k; ++i) mutate(r);
    return r;
  }
};

int cmd_fuzz(const Args& args) {
  const int port = int(args.num("port", 0));
  const long wanted = args.num("requests", 20000);
  const uint64_t seed = uint64_t(args.num("seed", 1));
  const int concurrency = int(args.num("conns", 64));
  const double seconds = double(args.num("seconds", 90));
  // Every connection's bytes, drawn from the seed alone: the same seed sends the same bytes.
  Fuzzer fz(seed);
  struct Bundle {
    std::string bytes;
    bool half_close;
  };
  std::vector<Bundle> bundles;
  long generated = 0;
  size_t total_bytes = 0;
  while (generated < wanted) {
    int k = fz.chance(30) ? 2 + int(fz.below(7)) : 1;  // pipelined mixes
    std::string b;
    for (int i = 0; i < k && generated < wanted; ++i, ++generated) b += fz.one();
    if (b.empty()) b = "\r\n";
    total_bytes += b.size();
    bundles.push_back(Bundle{std::move(b), fz.chance(75)});
  }
  std::vector<Exchange> slots(static_cast<size_t>(concurrency));
  std::vector<long> slot_bundle(size_t(concurrency), -1);
  std::vector<bool> slot_half(size_t(concurrency), false);
  std::vector<double> slot_activity(size_t(concurrency), 0);
  std::vector<Exchange*> ptrs;
  for (Exchange& x : slots) ptrs.push_back(&x);
  size_t next = 0, finished = 0;
  long responses = 0, refused = 0, resets = 0, timeouts = 0, consecutive_refused = 0;
  std::map<int, long> classes;
  const double t0 = now_s();
  bool server_down = false, out_of_time = false;
  auto tally = [&](Exchange& x) {
    // Responses: every status line at the start of the stream or after a line feed.
    for (size_t at = 0; (at = x.in.find("HTTP/1.", at)) != std::string::npos; at += 7) {
      if (at == 0 || x.in[at - 1] == '\n') {
        ++responses;
        if (at + 12 <= x.in.size()) ++classes[(x.in[at + 9] - '0')];
      }
    }
    if (x.outcome == "refused") {
      ++refused;
      ++consecutive_refused;
    } else {
      consecutive_refused = 0;
    }
    if (x.outcome == "reset") ++resets;
    if (x.outcome == "timeout" || x.outcome == "connect-timeout") ++timeouts;
  };
  for (;;) {
    double now = now_s();
    if (now > t0 + seconds) out_of_time = true;
    if (consecutive_refused >= 20) server_down = true;
    for (size_t i = 0; i < slots.size(); ++i) {
      Exchange& x = slots[i];
      if (slot_bundle[i] >= 0 && x.done) {
        tally(x);
        x.drop();
        ++finished;
        slot_bundle[i] = -1;
      }
      if (slot_bundle[i] < 0 && next < bundles.size() && !server_down && !out_of_time) {
        x = Exchange{};
        x.out = bundles[next].bytes;
        slot_half[i] = bundles[next].half_close;
        slot_bundle[i] = long(next++);
        slot_activity[i] = now;
        x.start(port, now);
      }
    }
    bool idle = std::all_of(slot_bundle.begin(), slot_bundle.end(), [](long b) { return b < 0; });
    if (idle && (next >= bundles.size() || server_down || out_of_time)) break;
    // A connection reads until the server closes it, or 1 s passes with nothing from it
    // (a cut head may be awaited for long), or 4 s in all.
    for (size_t i = 0; i < slots.size(); ++i) {
      Exchange& x = slots[i];
      if (slot_bundle[i] < 0 || x.done) continue;
      x.deadline = std::min(slot_activity[i] + 1.0, x.t_start + 4.0);
      if (out_of_time) x.deadline = now;
    }
    std::vector<size_t> before(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) before[i] = slots[i].in.size() + slots[i].sent;
    // Exchange stops at the first complete response; the fuzzer wants the whole stream, so
    // it drives reads itself and leaves Exchange the connect and the writes.
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < slots.size(); ++i) {
      Exchange& x = slots[i];
      if (slot_bundle[i] < 0 || !x.active() || x.done) continue;
      short e = x.connected ? short(POLLIN | (x.sent < x.out.size() ? POLLOUT : 0)) : short(POLLOUT);
      fds.push_back(pollfd{x.fd, e, 0});
      owner.push_back(i);
    }
    poll(fds.data(), fds.size(), 10);
    now = now_s();
    for (size_t j = 0; j < fds.size(); ++j) {
      Exchange& x = slots[owner[j]];
      short rev = fds[j].revents;
      if (!rev) continue;
      if (!x.connected) {
        int err = socket_error(x.fd);
        if (err) {
          x.finish(err == ECONNREFUSED ? "refused" : "reset", now);
          continue;
        }
        x.connected = true;
      }
      if ((rev & POLLOUT) && x.sent < x.out.size()) {
        ssize_t n = send(x.fd, x.out.data() + x.sent, x.out.size() - x.sent, MSG_NOSIGNAL);
        if (n > 0) {
          x.sent += size_t(n);
          if (x.sent == x.out.size() && slot_half[owner[j]]) shutdown(x.fd, SHUT_WR);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          x.finish("reset", now);
          continue;
        }
      }
      if (rev & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        for (;;) {
          ssize_t n = recv(x.fd, buf, sizeof buf, 0);
          if (n > 0) {
            if (x.in.size() < (1u << 20)) x.in.append(buf, size_t(n));
            continue;
          }
          if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
          x.finish(n == 0 ? "eof" : "reset", now);
          break;
        }
      }
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slot_bundle[i] < 0) continue;
      if (slots[i].in.size() + slots[i].sent != before[i]) slot_activity[i] = now;
      slots[i].check_deadline(now);
    }
  }
  std::printf("seed=%llu\nrequests=%ld\nconnections=%zu\nconnections_total=%zu\nbytes_sent_mib=%.1f\n",
              static_cast<unsigned long long>(seed), generated, finished, bundles.size(),
              double(total_bytes) / 1048576.0);
  std::printf("responses=%ld\n", responses);
  for (auto& [k, v] : classes) std::printf("responses_%dxx=%ld\n", k, v);
  std::printf("resets=%ld\ntimeouts=%ld\nrefused=%ld\nserver_down=%d\nout_of_time=%d\nelapsed_s=%.1f\n", resets,
              timeouts, refused, server_down ? 1 : 0, out_of_time ? 1 : 0, now_s() - t0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  raise_nofile();
  if (argc < 2) die("usage: liveclient freeport|get|slowloris|burst|inflight|pipeline|pipelined|hold|fuzz --port P ...");
  std::string cmd = argv[1];
  Args args(argc, argv, 2);
  if (cmd == "freeport") return cmd_freeport();
  if (args.num("port", 0) <= 0 || args.num("port", 0) > 65535) die("--port P is needed");
  if (cmd == "get") return cmd_get(args);
  if (cmd == "slowloris") return cmd_slowloris(args);
  if (cmd == "burst") return cmd_burst(args);
  if (cmd == "inflight") return cmd_inflight(args);
  if (cmd == "pipeline") return cmd_pipeline(args);
  if (cmd == "pipelined") return cmd_pipelined(args);
  if (cmd == "hold") return cmd_hold(args);
  if (cmd == "fuzz") return cmd_fuzz(args);
  die("unknown subcommand '" + cmd + "'");
}
