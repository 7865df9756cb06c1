// The per-process trace file: created on the first socket or resolver call (at load for a
// process with RANK set), mapped
// MAP_SHARED, appended to without locks. See include/rdzvscope/trace_format.h for the
// crash-safety rules this follows.
#pragma once

#include <stdint.h>

#include "rdzvscope/trace_format.h"

namespace rdzv {

enum class Create { IfNeeded, OnlyIfOpen };

// A reserved record slot; fill in `rec`, then commit().
struct Slot {
  rdzv_record* rec = nullptr;
  uint64_t index = 0;
  explicit operator bool() const { return rec != nullptr; }
};

// Reserves the next slot, creating the file first when asked to. Returns an empty Slot when
// tracing is off, the file could not be made, or the file is full (then counted as dropped).
// Must be called with the guard held.
Slot reserve_record(Create create);

// Publishes the record: stores its seal last with release order.
void commit_record(const Slot& slot);

bool trace_is_open();

// Opens the file when it is not open yet (with the guard held); true when it is open.
bool ensure_trace_open();

// The time the trace header says the process started (0 when unknown).
uint64_t process_start_realtime_ns();

// Whether port is one of this process's store ports (the recorder core's policy:
// MASTER_PORT, PET_RDZV_ENDPOINT's port, 29400, 29500, RDZVSCOPE_PORTS). MASTER_PORT is often
// set by the training script itself just before init_process_group, so it is looked up again
// here (connect, bind); a port learnt so is copied into the trace header.
bool is_store_port(uint16_t port);

// Once per trace file, with the guard held: which PyTorch the process has loaded, into the
// header (RDZV_FEAT_TORCH_VERSION). Reads /proc/self/maps and a version.py, so it runs only
// where a process meets the store the first time (connect, bind) and at exit, never per call.
void record_torch_version_once();

// fork child: drop the parent's mapping so that the child never writes the parent's file;
// the child makes its own file on its first socket call.
void writer_forget_after_fork();

// Configuration read once at load: RDZVSCOPE_DIR etc. and the store ports. Safe to call more
// than once.
void writer_configure();

// At load: a process with RANK set (a rank of the job) creates its file now rather than at
// its first socket call, so that a rank that never got that far is still on record.
void writer_open_if_rank();

// Path of the directory traces go to ("" when tracing is off), for exec re-injection.
const char* trace_dir();

}  // namespace rdzv
