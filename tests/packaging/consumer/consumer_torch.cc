// The LibTorch side of an installed trainrun (trainrun::torch, trainrun-torch.pc):
// rank 0's parameters reach every rank; "consumer_torch: rank R: weights match".
#include <torch/torch.h>
#include <trainrun/torch.h>
#include <trainrun/trainrun.h>

#include <cstdio>

int main() {
  trainrun::Communicator& comm = trainrun::init();
  torch::manual_seed(comm.rank());  // different weights on every rank until the broadcast
  torch::nn::Linear net(4, 1);
  trainrun::torch::broadcast_parameters(net->named_parameters(), 0);
  torch::Tensor mean = net->weight.detach().clone();
  comm.allreduce(mean.data_ptr<float>(), mean.data_ptr<float>(), mean.numel(), trainrun::DataType::Float32,
                 trainrun::ReduceOp::Average);
  std::printf("consumer_torch: rank %d: weights %s\n", comm.rank(),
              torch::equal(mean, net->weight.detach()) ? "match" : "differ");
  trainrun::shutdown();
}
