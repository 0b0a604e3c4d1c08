// hello: the smallest trainrun program. Every rank prints where it is in the
// job and the result of one allreduce (the sum of all ranks' numbers).
//
//   trainrun --local -np 4 ./build/examples/hello
#include <trainrun/trainrun.h>

#include <cstdio>

int main() {
  try {
    trainrun::Communicator& comm = trainrun::init();
    const float mine = static_cast<float>(comm.rank() + 1);
    float sum = 0;
    comm.allreduce(&mine, &sum, 1, trainrun::DataType::Float32, trainrun::ReduceOp::Sum);
    std::printf("hello from rank %d of %d (local %d/%d, cross %d/%d) on %s via %s: sum of 1..%d = %g\n", comm.rank(),
                comm.size(), comm.local_rank(), comm.local_size(), comm.cross_rank(), comm.cross_size(),
                comm.hostname().c_str(), comm.backend_name().c_str(), comm.size(), sum);
    comm.barrier();
    trainrun::shutdown();
    return 0;
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "hello: %s\n", e.what());
    return 1;
  }
}
