// Locks one resource across the nodes in QL_NODES with the C++ RAII wrapper.
// Build: cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <quorumlock.hpp>

int main() {
  const char *env = std::getenv("QL_NODES");
  if (!env) {
    std::fprintf(stderr, "set QL_NODES=redis://host:port,...\n");
    return 2;
  }
  std::vector<std::string> urls;
  std::stringstream in(env);
  for (std::string url; std::getline(in, url, ',');) urls.push_back(url);
  try {
    quorumlock::Client client(urls);
    quorumlock::Lock lock = client.acquire("hello");
    std::printf("C++: locked \"hello\" on %zu nodes, %lld ms left\n", client.node_count(),
                static_cast<long long>(lock.remaining().count()));
  } catch (const quorumlock::Error &e) {  // the destructor has released the lock
    std::fprintf(stderr, "%s: %s\n", e.code_name(), e.what());
    return 1;
  }
  std::puts("C++: released by the destructor");
  return 0;
}
