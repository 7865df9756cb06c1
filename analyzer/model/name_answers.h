// One name, two answers (issue 32): a process looked up the rendezvous host's name and got
// another address than the one at which the processes that looked up the same name reached
// the store, and its store connects went to that address and failed. The resolver decided
// where it connected (c10d connects to what getaddrinfo returns, in order), so those connects
// say nothing of the store, of its start or of the path to it: the store was never there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rank_facts.h"

namespace rdzvscope {

struct Misdirected {
  const ProcessFacts* f = nullptr;
  std::string name;                    // the name it looked up (its MASTER_ADDR)
  rdzv_sockaddr answer{};              // the address its lookup gave (as the resolver said it)
  const Event* lookup = nullptr;       // its first lookup that gave that address
  std::uint16_t port = 0;              // the store port it connected to
  std::vector<const Event*> attempts;  // its failed store connects to that address, in time order
                                       // (a connect given up shows as its wait and its close)
  int connects = 0;                    // the connect calls it made to that address
};

// Where the others reached the store through the same name: the name's answers of those that
// connected to the store port at an address their lookup gave.
struct ReachedThrough {
  const ProcessFacts* f = nullptr;
  rdzv_sockaddr answer{};  // the address its lookup gave and at which it reached the store
};

// The misdirected processes, by the time of their first failed connect. A process counts only
// when (1) it never connected to a store port, (2) a lookup of a rendezvous name gave it an
// address A and some of its failed store connects went to A, (3) other processes looked up
// the same name, got an address B and reached the store on the same port at B, and (4) no
// process reached the store at A (an address is compared as is, a loopback address only within
// one network namespace: another namespace's 127.0.0.1 is another host). Where some process
// did reach the store at A, A is the store's address and the path from this process is what
// failed (store_unreachable, connect_timeout).
std::vector<Misdirected> find_misdirected(const std::vector<ProcessFacts>& facts);

// Those that reached the store on `port` at the address their lookup of `name` gave.
std::vector<ReachedThrough> reached_through(const std::vector<ProcessFacts>& facts,
                                            const std::string& name, std::uint16_t port);

}  // namespace rdzvscope
