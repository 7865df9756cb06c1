// Which TCP ports are rendezvous ("store") ports. Per-call events are recorded only for
// sockets on these ports, so the set decides what the shim costs on everyone else's traffic.
#pragma once

#include <stdint.h>

#include "rdzvscope/trace_format.h"

namespace rdzv {

// Built from MASTER_PORT, the port of PET_RDZV_ENDPOINT, 29400, 29500 and RDZVSCOPE_PORTS.
void store_ports_init();

// MASTER_PORT is often set by the training script itself (os.environ) just before
// init_process_group, so it is looked up again when a socket is connected, bound or accepted.
// Returns true when that added a port (then the trace header's copy needs a refresh).
bool store_ports_refresh();

bool is_store_port(uint16_t port);

// Copies the current set into the trace header. Other threads may read or refresh it at the
// same time, so every entry is stored atomically.
void store_ports_export(uint16_t out[RDZV_MAX_STORE_PORTS]);

}  // namespace rdzv
