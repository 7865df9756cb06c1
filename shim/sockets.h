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

// The process reached a store (its first store connect succeeded): a TCP connection it makes
// or accepts from now on to anything but a store is a peer socket (kFdPeer).
bool store_reached();

// Gives fd, a connected TCP socket that is not a store socket, a slot and kFdPeer when the
// process reached a store; its info bits otherwise unchanged. Guard held.
void classify_peer_socket(int fd, uint64_t opened_ns, const rdzv_sockaddr& peer,
                          const rdzv_sockaddr& local);

}  // namespace rdzv
