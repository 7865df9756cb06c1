// Shared logic of the socket hooks: classifying sockets, connect outcomes, closes.
#pragma once

#include <stdint.h>

#include "fd_table.h"
#include "rdzvscope/trace_format.h"

namespace rdzv {

// Outcome of a non-blocking connect, learnt from getsockopt(SO_ERROR), a repeated connect,
// or a wait. so_error 0 = connected. Guard held.
void complete_pending_connect(int fd, uint16_t info, int so_error, rdzv_op op);

// The socket is going away (close, dup2 over it, close_range). Records what a store socket
// carried and the fate of a connect still in progress, then forgets the fd. Guard held.
void note_socket_closing(int fd, uint16_t info, rdzv_op op, bool already_closed);

// The first store connect of the process gets a resource snapshot: it shows what the rank did
// between its launch and joining the rendezvous.
void snapshot_first_store_connect();

}  // namespace rdzv
