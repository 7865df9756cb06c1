#include "terminal.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace rdzvscope::cli {

namespace {

volatile sig_atomic_t g_quit = 0;

void on_quit(int) { g_quit = 1; }
void on_resize(int) {}  // only interrupts poll(): the loop redraws

void install(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once with EINTR
  sigaction(sig, &sa, nullptr);
}

// Straight to the descriptor, in as few write()s as the kernel takes: stdout on a terminal is
// line-buffered, so stdio would hand a frame over one line at a time and the terminal (and
// anything capturing it) could show half an old frame under half a new one.
void put(const std::string& s) {
  std::fflush(stdout);
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal is gone: nothing more to draw
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Cut to `cols` columns. Counts bytes, which is columns for the ASCII the views write; a
// multibyte host name may end a little early, never past the edge.
std::string fit(const std::string& line, int cols) {
  return line.size() <= static_cast<std::size_t>(cols)
             ? line
             : line.substr(0, static_cast<std::size_t>(cols));
}

}  // namespace

Terminal::Terminal() {
  install(SIGINT, on_quit);
  install(SIGTERM, on_quit);
  install(SIGWINCH, on_resize);
  if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    keys_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  put("\x1b[?1049h\x1b[?25l");  // the alternate screen, cursor hidden
}

Terminal::~Terminal() {
  put("\x1b[?25h\x1b[?1049l");
  if (keys_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

Terminal::Size Terminal::size() const {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return {};
  return {ws.ws_row, ws.ws_col};
}

void Terminal::draw(const std::vector<std::string>& lines) const {
  const Size sz = size();
  std::string screen = "\x1b[H";
  for (std::size_t i = 0; i < lines.size() && i < static_cast<std::size_t>(sz.rows); ++i) {
    if (i) screen += "\r\n";
    screen += fit(lines[i], sz.cols) + "\x1b[K";
  }
  screen += "\x1b[J";
  put(screen);
}

char Terminal::wait_key(std::chrono::milliseconds timeout) const {
  pollfd p{keys_ ? STDIN_FILENO : -1, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0 || !(p.revents & POLLIN)) return 0;
  char c = 0;
  return ::read(STDIN_FILENO, &c, 1) == 1 ? c : 0;
}

bool Terminal::quit_requested() const { return g_quit != 0; }

}  // namespace rdzvscope::cli
