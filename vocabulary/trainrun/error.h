// trainrun::Error: the one exception type of the library. Its message names
// the rank, the operation and the peer where they are known; code() says
// what kind of failure it was. Immutable once thrown.
#pragma once

#include <stdexcept>
#include <string>

namespace trainrun {

class Error : public std::runtime_error {
 public:
  // MembershipChanged: an elastic job's membership changed under this rank
  // (trainrun::elastic::HostsUpdated); elastic::run re-forms the world.
  enum class Code { InvalidArgument, Timeout, Io, Backend, Mismatch, Unsupported, Internal, MembershipChanged };

  Error(Code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

const char* to_string(Error::Code code);

}  // namespace trainrun
