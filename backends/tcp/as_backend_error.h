// Nothing but Error leaves a backend (backends/backend.h): as_backend_error
// runs a backend's entry point and turns the standard library's exceptions
// (std::bad_alloc of a buffer, std::length_error, ...) into Error(Backend),
// each message starting with the backend's name.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {

template <typename Fn>
void as_backend_error(const char* backend, Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(Error::Code::Backend, std::string(backend) + ": out of memory for this collective's buffers");
  } catch (const std::length_error&) {
    throw Error(Error::Code::Backend,
                std::string(backend) + ": this collective's buffers would exceed the largest allocation possible");
  } catch (const std::exception& e) {
    throw Error(Error::Code::Backend, std::string(backend) + ": " + e.what());
  }
}

}  // namespace trainrun::detail
