// lmx config show|fields
#include <iostream>

#include "cli/app.h"
#include "config/config.h"
#include "config/fields.h"

namespace lmx::cli {

void add_config_commands(CLI::App& app, Globals& g) {
  auto* config = app.add_subcommand("config", "Inspect configs: the resolved YAML, every field");
  config->require_subcommand(1);

  struct ShowArgs {
    std::string path;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<ShowArgs>();
  auto* show = config->add_subcommand("show", "Print the fully resolved config (extends and --set applied)");
  show->add_option("config", args->path, "config file (YAML)")->required();
  show->add_option("--set", args->sets, "override a field: section.key=value (repeatable)");
  show->callback([&g, args] {
    g.run = [args] {
      std::cout << to_yaml(load_config(args->path, args->sets));
      return 0;
    };
  });

  auto* fields = config->add_subcommand("fields", "Every config key with its type, default and meaning (Markdown)");
  fields->callback([&g] {
    g.run = [] {
      std::cout << fields_markdown();
      return 0;
    };
  });
}

}  // namespace lmx::cli
