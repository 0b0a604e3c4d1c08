#include "cli/mpirun_command.h"

#include <algorithm>
#include <cctype>

#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(Error::Code::InvalidArgument, message);
}

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string host_list(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) {
    if (h.host.empty() || h.slots < 1) {
      invalid("host '" + h.host + ":" + std::to_string(h.slots) + "' needs a name and at least one slot");
    }
    out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.slots);
  }
  return out;
}

// One double-quoted run starting after the opening quote; returns the
// index of the closing quote.
std::size_t read_double_quoted(std::string_view text, std::size_t i, std::string& word) {
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') return i;
    if (c == '\\' && i + 1 < text.size() && std::string_view("\"\\$`\n").find(text[i + 1]) != std::string_view::npos) {
      if (text[++i] != '\n') word += text[i];
      continue;
    }
    word += c;
  }
  invalid("--mpi-args: unterminated \" quote in: " + std::string(text));
}

}  // namespace

std::vector<std::string> split_shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // a line continuation joins, whether inside a word or between words
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) invalid("--mpi-args: unterminated ' quote in: " + std::string(text));
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      i = read_double_quoted(text, i + 1, word);
    } else if (c == '\\') {
      if (i + 1 == text.size()) invalid("--mpi-args: trailing backslash in: " + std::string(text));
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-./:=,@%+").find(c) != std::string_view::npos;
    });
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::vector<std::string> mpirun_command(const MpirunJob& job) {
  if (job.command.empty()) invalid("no program given");
  std::vector<std::string> argv = {job.mpirun, "-np", std::to_string(job.np), "-H",
                                   job.hosts.empty() ? "localhost:" + std::to_string(job.np)
                                                     : host_list(job.hosts),
                                   // trainrun's placement: ranks fill hosts in order and
                                   // are not pinned (frameworks run their own threads).
                                   "--bind-to", "none", "--map-by", "slot"};
  // -H localhost:np tells Open MPI there are np slots, so it would busy-poll
  // even with more ranks than CPUs: np=4 conformance on 2 CPUs took 3x as long.
  if (job.hosts.empty() && job.local_cpus > 0 && job.np > job.local_cpus) {
    argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  }
  if (job.tag_output) argv.push_back("--tag-output");
  if (job.as_root) argv.push_back("--allow-run-as-root");
  auto set_by_job = [&](const std::string& name) {
    return std::any_of(job.job_env.begin(), job.job_env.end(), [&](const auto& e) { return e.first == name; });
  };
  for (const auto& [name, value] : job.job_env) {
    if (!is_env_name(name)) invalid("not an environment variable name: '" + name + "'");
    argv.insert(argv.end(), {"-x", name + "=" + value});
  }
  for (const std::string& name : job.forward_env) {
    if (!is_env_name(name)) invalid("not an environment variable name: '" + name + "'");
    if (!set_by_job(name)) argv.insert(argv.end(), {"-x", name});
  }
  for (std::string& word : split_shell_words(job.mpi_args)) argv.push_back(std::move(word));
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return argv;
}

}  // namespace trainrun::cli
