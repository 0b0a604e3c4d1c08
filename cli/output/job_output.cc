#include "cli/output/job_output.h"

namespace trainrun::cli {

OutputRouter::Options job_output_options(const Options& options, const JobPlan& plan) {
  OutputRouter::Options output;
  output.tag = options.tag_output;
  output.timestamp = options.timestamp_output;
  output.merge_stderr = options.merge_stderr;
  output.console_ranks = plan.console_ranks;
  output.directory = options.output_dir;
  output.size = static_cast<int>(plan.ranks.size());
  return output;
}

}  // namespace trainrun::cli
