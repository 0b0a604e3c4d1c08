// torch.distributed's Store (c10d::Store: torchrun's TCPStore, env://,
// tcp://, file://, wrapped in the group's PrefixStore) as the ForeignStore
// trainrun._core builds the world through when trainrun's launcher did not
// start the process (docs/design.md §11.1). Thread-safe as torch's stores are.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>
#include <string>

#include "integrations/python/core/core_group.h"

namespace trainrun::c10d {

std::shared_ptr<python::ForeignStore> foreign_store(c10::intrusive_ptr<::c10d::Store> store);

// The host a TCPStore under `store`'s prefixes connects to (torch's
// MASTER_ADDR); empty for another store.
std::string store_host(const c10::intrusive_ptr<::c10d::Store>& store);

}  // namespace trainrun::c10d
