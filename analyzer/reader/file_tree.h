// The files below a directory that a reader wants: trace files (*.rzt) and preflight reports
// (preflight.<host>.json) sit in a per-job, per-host tree (BASE/%Y/%m/%d/%j/%h), a few levels
// deep. One walk for both, so their depth limit and order are the same.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace rdzvscope {

// A tree deeper than this below the given directory is not one of ours, and a loop of bind
// mounts must not make the walk run forever.
inline constexpr int kMaxFileTreeDepth = 8;

// Appends the paths of the files under dir that `wanted` accepts (by name, and by dirent type:
// DT_REG, DT_LNK, DT_FIFO, ..., or DT_UNKNOWN where the file system does not say), and those of its
// subdirectories (symbolic links to directories are not followed), at most kMaxFileTreeDepth
// levels down: sorted within each directory, a directory's own files before its
// subdirectories'. An entry `wanted` accepts is listed even when it is a directory (and then
// not walked). A directory that cannot be opened adds nothing.
void files_below(const std::string& dir, const std::function<bool(const std::string& name, unsigned char type)>& wanted,
                 std::vector<std::string>& out);

}  // namespace rdzvscope
