// lmx export: a checkpoint as a Hugging Face Llama folder (model/hf_llama.h).
#include <fmt/format.h>

#include "cli/app.h"
#include "model/checkpoint.h"
#include "model/hf_llama.h"
#include "util/error.h"
#include "util/log.h"

namespace lmx::cli {

void add_export_command(CLI::App& app, Globals& g) {
  struct Args {
    std::string checkpoint, hf;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export", "Write a checkpoint as a Hugging Face Llama folder (config.json, model.safetensors)");
  cmd->add_option("checkpoint", a->checkpoint, "model.safetensors written by lmx train (or an HF Llama folder)")->required();
  cmd->add_option("--hf", a->hf, "output folder (new or empty) for LlamaForCausalLM")->required();
  cmd->callback([&g, a] {
    g.run = [a] {
      Checkpoint ck = read_checkpoint(a->checkpoint);
      export_hf_llama(ck, a->hf);
      log::info("export", "{} -> {} (config.json, model.safetensors)", a->checkpoint, a->hf);
      return 0;
    };
  });
}

}  // namespace lmx::cli
