// lmx list: every component kind with its names, from the registry tables.
#include <fmt/format.h>

#include <iostream>

#include "cli/app.h"
#include "config/registry.h"

namespace lmx::cli {

struct ListOptions {};

int run_list(const ListOptions&, const Globals&) {
  for (auto kind : registry::kinds()) {
    std::cout << registry::kind_name(kind) << ":\n";
    for (const auto& e : registry::entries(kind)) std::cout << fmt::format("  {:<12} {}\n", e.name, e.description);
  }
  return 0;
}

void add_list_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("list", "List every component name per kind (the registry)");
  on_run(cmd, g, std::make_shared<ListOptions>(), run_list);
}

}  // namespace lmx::cli
