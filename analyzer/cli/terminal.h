// The terminal of the live view (`watch`): one screen redrawn in place on the alternate
// screen, keys read one at a time, redrawn at once when the window is resized. Everything is
// restored when it goes out of scope, and on SIGINT/SIGTERM (the loop sees quit_requested()).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <termios.h>

namespace rdzvscope::cli {

class Terminal {
 public:
  Terminal();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  struct Size {
    int rows = 24, cols = 80;
  };
  Size size() const;
  // The whole screen: each line cut to the window's width, the rest of the screen cleared.
  void draw(const std::vector<std::string>& lines) const;

  // Waits up to `timeout` for a key; returns it, or 0 after the timeout, a resize, or a
  // signal that asks to quit.
  char wait_key(std::chrono::milliseconds timeout) const;
  bool quit_requested() const;

 private:
  bool keys_ = false;  // stdin is a terminal, put in non-canonical mode
  termios saved_{};
};

}  // namespace rdzvscope::cli
