// The public headers show the API and nothing of the library's insides
// (docs/design.md §5): a Communicator is one pointer to its implementation,
// its backend and engine are out of users' reach, and elastic::State's hook
// for run() is private. Checked through the types themselves, so that a
// member added back to the header fails here.
#include <doctest/doctest.h>

#include <type_traits>
#include <utility>

#include "trainrun/trainrun.h"

namespace {

template <typename T, typename = void>
struct HasBackend : std::false_type {};
template <typename T>
struct HasBackend<T, std::void_t<decltype(std::declval<T&>().backend())>> : std::true_type {};

template <typename T, typename = void>
struct HasEngine : std::false_type {};
template <typename T>
struct HasEngine<T, std::void_t<decltype(std::declval<T&>().engine())>> : std::true_type {};

template <typename T, typename = void>
struct HasReset : std::false_type {};
template <typename T>
struct HasReset<T, std::void_t<decltype(std::declval<const T&>().reset())>> : std::true_type {};

}  // namespace

TEST_CASE("Communicator: the API only, its insides behind one pointer") {
  CHECK(sizeof(trainrun::Communicator) == sizeof(void*));
  CHECK_FALSE(HasBackend<trainrun::Communicator>::value);
  CHECK_FALSE(HasEngine<trainrun::Communicator>::value);
  CHECK_FALSE(std::is_constructible_v<trainrun::Communicator>);
  CHECK_FALSE(std::is_copy_constructible_v<trainrun::Communicator>);
}

TEST_CASE("elastic::State: the on_reset callbacks run only from elastic::run") {
  CHECK_FALSE(HasReset<trainrun::elastic::State>::value);
}
