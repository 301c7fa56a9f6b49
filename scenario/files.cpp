#include "scenario/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <streambuf>

namespace loopsim::sim {

namespace {

// Each reads after "cannot write PATH".
constexpr const char* not_regular = ": it is not a regular file (a folder, a FIFO, a device or a socket)";
constexpr const char* a_link = ": it is a symbolic link, and loopsim writes nothing through a link";

// An ostream's buffer over a descriptor: writes whole, retries EINTR, keeps the first error.
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    for (char* p = pbase(); p < pptr();) {
      const ssize_t n = ::write(fd_, p, std::size_t(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        return false;
      }
      p += n;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return true;
  }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

struct Closer {
  int fd;
  ~Closer() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string unwritable_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::string();  // not there yet: made by the open
  if (S_ISLNK(st.st_mode)) return a_link;
  if (!S_ISREG(st.st_mode)) return not_regular;
  return std::string();
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string input_overwritten(const std::string& output, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    if (!input.empty() && same_file(output, input)) return input;
  }
  return std::string();
}

int open_output(const std::string& path, std::string& why) {
  if (why = unwritable_output(path); !why.empty()) return -1;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    // ELOOP: a link planted since the check; ENXIO: a FIFO nobody reads.
    why = errno == ELOOP ? a_link : errno == ENXIO ? not_regular : std::string(": ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why = not_regular;
    return -1;
  }
  if (::fcntl(fd, F_SETFL, 0) != 0 || ::ftruncate(fd, 0) != 0) {
    why = std::string(": ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::string why;
  Closer file{open_output(path, why)};
  if (file.fd < 0) return why;
  DescriptorBuffer buffer(file.fd);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  if (!out || buffer.error() != 0) return std::string(": ") + std::strerror(buffer.error() != 0 ? buffer.error() : EIO);
  const int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) return std::string(": ") + std::strerror(errno);
  return std::string();
}

}  // namespace loopsim::sim
