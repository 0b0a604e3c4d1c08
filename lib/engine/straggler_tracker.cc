#include "lib/engine/straggler_tracker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainrun::detail {
namespace {

// The job-long lag histogram: bucket 0 holds lags under 10 us, then
// buckets grow by 2^(1/8) (9 %), up to ~10^4 s; quantiles are read back at
// a bucket's geometric middle, within 5 %.
constexpr double kFirstEdgeUs = 10;
constexpr double kStepsPerOctave = 8;
constexpr std::size_t kBuckets = 8 * 30 + 1;

std::size_t bucket_of(double lag_us) {
  if (lag_us < kFirstEdgeUs) return 0;
  const double index = 1 + std::floor(std::log2(lag_us / kFirstEdgeUs) * kStepsPerOctave);
  return std::min(kBuckets - 1, static_cast<std::size_t>(index));
}

double bucket_middle_ms(std::size_t bucket) {
  if (bucket == 0) return kFirstEdgeUs / 2 / 1000;
  return kFirstEdgeUs * std::exp2((static_cast<double>(bucket) - 0.5) / kStepsPerOctave) / 1000;
}

double histogram_quantile(const std::vector<std::uint64_t>& histogram, double q) {
  std::uint64_t total = 0;
  for (std::uint64_t n : histogram) total += n;
  if (total == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < histogram.size(); ++b) {
    seen += histogram[b];
    if (seen >= std::max<std::uint64_t>(rank, 1)) return bucket_middle_ms(b);
  }
  return bucket_middle_ms(histogram.size() - 1);
}

// Nearest-rank quantile of `values` (sorted in place).
double quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<std::size_t>(rank, 1)) - 1];
}

std::string rounded_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms >= 10 ? "%.0f" : "%.1f", ms);
  return text;
}

}  // namespace

StragglerTracker::StragglerTracker(int rank, int size, std::size_t window)
    : rank_(rank), size_(size), window_(std::max<std::size_t>(window, 1)), last_(static_cast<std::size_t>(size), 0),
      window_last_(static_cast<std::size_t>(size), 0), histogram_(kBuckets, 0) {
  waits_.reserve(window_);
}

void StragglerTracker::record(std::optional<std::chrono::microseconds> wait) {
  waits_.push_back(wait ? std::max<std::int64_t>(0, wait->count()) : kAbsent);
}

std::vector<std::int64_t> StragglerTracker::exchange_input() const {
  // [0, n): wait << 20 | rank, so the Min is the shortest wait and its rank
  // (ties: the lower rank); [n, 2n): -wait, so the Min is the longest wait.
  const std::size_t n = waits_.size();
  std::vector<std::int64_t> out(2 * n, kAbsent);
  constexpr std::int64_t kMaxWait = (std::int64_t{1} << 42) - 1;  // ~50 days in us
  for (std::size_t c = 0; c < n; ++c) {
    if (waits_[c] == kAbsent) continue;
    out[c] = (std::min(waits_[c], kMaxWait) << 20) | rank_;
    out[n + c] = -std::min(waits_[c], kMaxWait);
  }
  return out;
}

void StragglerTracker::absorb(const std::vector<std::int64_t>& reduced) {
  const std::size_t n = reduced.size() / 2;
  std::fill(window_last_.begin(), window_last_.end(), 0);
  window_lags_ms_.clear();
  window_cycles_ = 0;
  for (std::size_t c = 0; c < n && c < waits_.size(); ++c) {
    if (reduced[c] == kAbsent) continue;  // nobody had ops: cannot happen, but harmless
    const auto last = static_cast<std::size_t>(reduced[c] & (kMaxRanks - 1));
    if (last < window_last_.size()) ++window_last_[last], ++last_[last];
    ++window_cycles_;
    if (waits_[c] == kAbsent) continue;
    const double lag_us = static_cast<double>(-reduced[n + c] - waits_[c]);
    window_lags_ms_.push_back(lag_us / 1000);
    ++histogram_[bucket_of(lag_us)];
  }
  cycles_ += window_cycles_;
  waits_.clear();
}

StragglerTracker::Summary StragglerTracker::summary() const {
  std::vector<double> lags = window_lags_ms_;
  const double median = quantile(lags, 0.5), p95 = quantile(lags, 0.95);
  return {median, p95, histogram_quantile(histogram_, 0.5), histogram_quantile(histogram_, 0.95)};
}

std::vector<StragglerRow> StragglerTracker::table(const std::vector<Summary>& summaries,
                                                  const std::vector<std::string>& hosts) const {
  std::vector<StragglerRow> rows;
  for (int r = 0; r < size_ && r < static_cast<int>(summaries.size()); ++r) {
    rows.push_back(
        {r, r < static_cast<int>(hosts.size()) ? hosts[r] : "", cycles_, last_[r], summaries[r][2], summaries[r][3]});
  }
  return rows;
}

std::optional<std::string> straggler_warning(const std::vector<std::uint64_t>& window_last, std::size_t window_cycles,
                                             std::size_t window,
                                             const std::vector<StragglerTracker::Summary>& summaries,
                                             const std::vector<std::string>& hosts, double pct) {
  if (pct <= 0 || window_cycles < window || window_last.empty()) return std::nullopt;
  const auto most = std::max_element(window_last.begin(), window_last.end());
  const auto rank = static_cast<std::size_t>(most - window_last.begin());
  const double share = 100.0 * static_cast<double>(*most) / static_cast<double>(window_cycles);
  const double median = rank < summaries.size() ? summaries[rank][0] : 0;
  if (share <= pct || median < 1.0) return std::nullopt;
  const std::string host = rank < hosts.size() ? " (" + hosts[rank] + ")" : "";
  return "rank " + std::to_string(rank) + host + " was last in " + std::to_string(std::lround(share)) +
         "% of the last " + std::to_string(window_cycles) + " cycles, median lag " + rounded_ms(median) + " ms";
}

}  // namespace trainrun::detail
