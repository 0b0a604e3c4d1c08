// The smallest real trainrun job: init (rendezvous + full mesh), one
// barrier, exit. What launch_bench.py times.
#include <trainrun/trainrun.h>

int main() {
  trainrun::init().barrier();
  trainrun::shutdown();
  return 0;
}
