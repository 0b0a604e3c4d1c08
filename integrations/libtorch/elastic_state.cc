// add_module and add_optimizer of <trainrun/torch.h>: LibTorch's own
// serialization (archives in memory) as the save/load of an elastic State
// part. Loading copies into the existing parameters and optimizer state, so
// optimizers and DistributedOptimizers built on them stay valid.
#include <torch/serialize.h>

#include <sstream>

#include "trainrun/elastic.h"
#include "trainrun/torch.h"

namespace trainrun::torch {
namespace {

template <class T>
std::string save_bytes(const T& object) {
  ::torch::serialize::OutputArchive archive;
  object.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

template <class T>
void load_bytes(T& object, const std::string& bytes) {
  ::torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  object.load(archive);
}

}  // namespace

void add_module(elastic::State& state, std::string name, ::torch::nn::Module& module) {
  state.add(
      std::move(name), [&module] { return save_bytes(module); },
      [&module](const std::string& bytes) { load_bytes(module, bytes); });
}

void add_optimizer(elastic::State& state, std::string name, ::torch::optim::Optimizer& optimizer) {
  state.add(
      std::move(name), [&optimizer] { return save_bytes(optimizer); },
      [&optimizer](const std::string& bytes) { load_bytes(optimizer, bytes); });
}

}  // namespace trainrun::torch
