// loopsim generate --shape FILE: scenarios drawn within the shape a user's file gives.
//
// The file says what the workload is (its client groups: their requests, paths or bytes, their
// framing, keep-alive, bodies, half-closes, pipelining), what may go wrong (its [[faults]] and
// [[actions]]: accept errors, the descriptor limit, resets, signals), and what must hold (its
// [[expect]] entries). Each run varies what the file leaves to chance: how many clients each
// group has (1 to twice the file's), when the workload comes (all of it moved later by up to
// 300 ms: the groups keep their times to one another, and the program its room to start), at
// what rate each group connects, when each fault and action happens (moved with the workload,
// then within 150 ms either side) and whether it happens at all, and the seed. Nothing else is drawn: a policy the
// file's workload does not exercise (a body, a half-close, keep-alive) is never judged against.
#pragma once

#include <string>

#include "explore/generate.hpp"
#include "explore/shape_variation.hpp"  // shaped_text

namespace loopsim::explore {

// As generate(), over shaped_text's scenarios; a failure is shrunk towards fewer clients,
// groups, faults and actions.
GenerateResult generate_shaped(const std::string& shape, const std::string& file, const GenerateOptions& options);

}  // namespace loopsim::explore
