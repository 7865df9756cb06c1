// One row per failure class: its precedence among the candidates, the rule that proposes it,
// and what to do when runs of it are compared (--runs). Adding a class is adding its enum
// value (failure_class.h), its rule (rule_<class>.cpp) and its row here.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "model/context.h"
#include "model/failure_class.h"

namespace rdzvscope {

struct ClassRow {
  FailureClass cls;
  // Precedence follows causality: a cause outranks the symptoms it produces (a port conflict
  // makes clients time out; a collision makes pipes break; a dead store makes stragglers).
  int precedence;
  // The precedence of a candidate whose cause the evidence does not show (Candidate::
  // cause_shown false): a broken pipe with no dead peer is only a suspected TCPStore bug and
  // yields to the timeouts that can explain it.
  int precedence_unshown;
  std::optional<Candidate> (*rule)(const Context&);
  // The class says the rendezvous never completed (a store nobody reached, a name, a port, a
  // setting): said of a job whose rendezvous completed, the verdict contradicts its own facts
  // (consistency.h).
  bool startup_only;
  // --runs, the failure stayed on one host: the next step on that host.
  std::string (*same_host_step)(const std::string& host, const Diagnosis& last);
  // --runs, the failure moved between ranks and hosts: the next step.
  std::string (*moving_step)(const Diagnosis& last);
};

// The classes a rule can propose, strongest first. healthy and unknown have no row: they are
// what diagnose() says when no rule answers.
std::span<const ClassRow> class_registry();
const ClassRow* row_of(FailureClass c);
int precedence_of(const Candidate& c);
// The --runs next steps of a class's row, with the generic wording for healthy and unknown.
std::string same_host_step(FailureClass c, const std::string& host, const Diagnosis& last);
std::string moving_step(FailureClass c, const Diagnosis& last);

}  // namespace rdzvscope
