// The Executor's fused batches on a backend that records what it is asked:
// host batches pack into the engine's buffer; CUDA batches (here host memory
// labelled with a device, since a unit test has no GPU) pack into the
// backend's device fusion buffer through its copies, with one reduction
// between them and no host copy of the tensors; a backend without device
// fusion (a build without CUDA) gets them one by one.
#include <doctest/doctest.h>

#include <cstring>

#include "lib/engine/executor.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

// Sums nothing (one rank): records calls, and as DeviceFusion copies with memcpy.
class RecordingBackend final : public Backend, public DeviceFusion {
 public:
  explicit RecordingBackend(bool has_device_fusion) : has_device_fusion_(has_device_fusion) {}
  std::string name() const override { return "recording"; }
  void allreduce(const void* send, void* recv, std::size_t count, DataType, ReduceOp) override {
    calls.push_back("allreduce " + std::to_string(count) + (recv == fusion.data() ? " of the device buffer" : ""));
    CHECK(send == recv);
    // Marks what was reduced, so the test sees the copies out carry it.
    for (std::size_t i = 0; i < count; ++i) static_cast<float*>(recv)[i] += 100;
  }
  void allgather(const void*, void*, std::size_t, DataType) override {}
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {}
  void broadcast(void*, std::size_t, DataType, int) override {}
  void alltoall(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&,
                DataType) override {}
  void reducescatter(const void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {}
  void barrier() override {}
  void synchronize() override {}
  void abort() noexcept override {}
  std::unique_ptr<Backend> subset(const std::vector<int>&, World*, const std::string&) override { return nullptr; }
  DeviceFusion* device_fusion() override { return has_device_fusion_ ? this : nullptr; }

  void* fusion_buffer(std::size_t bytes, const void*) override {
    calls.push_back("fusion_buffer " + std::to_string(bytes));
    if (fusion.size() < bytes) fusion.resize(bytes);
    return fusion.data();
  }
  void enqueue_copies(const std::vector<DeviceCopy>& copies) override {
    calls.push_back("copies " + std::to_string(copies.size()));
    for (const DeviceCopy& c : copies) std::memcpy(c.to, c.from, c.bytes);
  }

  std::vector<std::string> calls;
  std::vector<char> fusion;

 private:
  const bool has_device_fusion_;
};

struct Fixture {
  std::vector<std::vector<float>> tensors{{1, 2, 3}, {4, 5}};
  std::vector<Response> responses;
  std::vector<Work> works;

  explicit Fixture(int device) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      Response r;
      r.request.name = "t" + std::to_string(i);
      r.request.shape = {static_cast<std::int64_t>(tensors[i].size())};
      r.request.device = device;
      responses.push_back(r);
      Work w;
      w.request = r.request;
      w.data = {tensors[i].data()};
      works.push_back(w);
    }
  }
  void run(Backend& backend) {
    Timeline timeline;
    Executor executor(backend, 0, 1, 1 << 20, timeline);
    const std::vector<Batch> batches = plan_batches(responses, 1 << 20);
    REQUIRE(batches.size() == 1);
    REQUIRE(batches[0].fused);
    executor.run(batches[0], responses, {&works[0], &works[1]});
  }
};

}  // namespace

TEST_CASE("a fused batch of CUDA tensors: copies in, one reduction of the device buffer, copies out") {
  Fixture f(/*device=*/0);
  RecordingBackend backend(true);
  f.run(backend);
  const std::size_t extent = kFusionAlignment + 2 * sizeof(float);
  const std::vector<std::string> expected = {
      "fusion_buffer " + std::to_string(extent), "copies 2",
      "allreduce " + std::to_string(extent / sizeof(float)) + " of the device buffer", "copies 2"};
  CHECK(backend.calls == expected);
  CHECK(f.tensors[0] == std::vector<float>{101, 102, 103});
  CHECK(f.tensors[1] == std::vector<float>{104, 105});
}

TEST_CASE("a fused batch of host tensors packs into the engine's own buffer") {
  Fixture f(kCpu);
  RecordingBackend backend(true);
  f.run(backend);
  REQUIRE(backend.calls.size() == 1);
  CHECK(backend.calls[0].rfind("allreduce ", 0) == 0);
  CHECK(backend.calls[0].find("device") == std::string::npos);
  CHECK(f.tensors[0] == std::vector<float>{101, 102, 103});
  CHECK(f.tensors[1] == std::vector<float>{104, 105});
}

TEST_CASE("a fused CUDA batch on a backend without device fusion runs tensor by tensor, in place") {
  Fixture f(/*device=*/0);
  RecordingBackend backend(false);
  f.run(backend);
  CHECK(backend.calls == std::vector<std::string>{"allreduce 3", "allreduce 2"});
  CHECK(f.tensors[0] == std::vector<float>{101, 102, 103});
  CHECK(f.tensors[1] == std::vector<float>{104, 105});
}
