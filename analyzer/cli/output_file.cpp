#include "output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdzvscope::cli {

namespace {

std::optional<Error> failure(const std::string& path, const char* what, int err) {
  return Error{path, std::string(what) + ": " + std::strerror(err), std::nullopt};
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<Error> write_file_atomically(const std::string& path, const std::string& text) {
  // Same directory as the target: rename() is atomic only within one file system. The pid
  // keeps two writers of one path (two watchers) from sharing a temporary file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failure(path, "cannot create a temporary file beside it", errno);
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    return failure(path, "writing", written ? errno : write_errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return failure(path, "renaming the temporary file over it", err);
  }
  return std::nullopt;
}

}  // namespace rdzvscope::cli
