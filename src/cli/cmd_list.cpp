// lmx list: every component kind with its names, from the registry tables.
#include <fmt/format.h>

#include <iostream>

#include "cli/app.h"
#include "model/registry.h"

namespace lmx::cli {

void add_list_command(CLI::App& app, Globals& g) {
  auto* list = app.add_subcommand("list", "List every component name per kind (the registry)");
  list->callback([&g] {
    g.run = [] {
      for (auto kind : registry::kinds()) {
        std::cout << registry::kind_name(kind) << ":\n";
        for (const auto& e : registry::entries(kind))
          std::cout << fmt::format("  {:<12} {}\n", e.name, e.description);
      }
      return 0;
    };
  });
}

}  // namespace lmx::cli
