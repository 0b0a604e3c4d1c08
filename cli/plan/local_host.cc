#include "cli/plan/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <set>

namespace trainrun::cli {
namespace {

std::string address_text(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  }
  return text;
}

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  }
  return sa->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
}

}  // namespace

std::string this_host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

namespace {

std::set<std::string> interface_addresses() {
  std::set<std::string> local;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (i->ifa_addr) local.insert(address_text(i->ifa_addr));
    }
    ::freeifaddrs(list);
  }
  return local;
}

bool resolves_to(const std::string& host, const std::set<std::string>& local) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  bool found = false;
  for (addrinfo* ai = result; ai && !found; ai = ai->ai_next) {
    found = is_loopback(ai->ai_addr) || local.count(address_text(ai->ai_addr)) > 0;
  }
  ::freeaddrinfo(result);
  return found;
}

}  // namespace

bool is_local_host(const std::string& host) { return are_local_hosts({host}).front(); }

std::vector<bool> are_local_hosts(const std::vector<std::string>& hosts) {
  const std::string me = this_host_name();
  const std::set<std::string> local = interface_addresses();
  std::map<std::string, bool> answers;
  std::vector<std::string> to_resolve;
  for (const std::string& host : hosts) {
    if (answers.count(host)) continue;
    const bool named = host == "localhost" || host == me;
    answers[host] = named;
    if (!named) to_resolve.push_back(host);
  }
  // At most kResolvers names at a time, each on its own thread.
  constexpr std::size_t kResolvers = 64;
  for (std::size_t first = 0; first < to_resolve.size(); first += kResolvers) {
    std::vector<std::future<bool>> found;
    const std::size_t end = std::min(to_resolve.size(), first + kResolvers);
    for (std::size_t i = first; i < end; ++i) {
      found.push_back(std::async(std::launch::async, resolves_to, std::cref(to_resolve[i]), std::cref(local)));
    }
    for (std::size_t i = first; i < end; ++i) answers[to_resolve[i]] = found[i - first].get();
  }
  std::vector<bool> out;
  for (const std::string& host : hosts) out.push_back(answers[host]);
  return out;
}

}  // namespace trainrun::cli
