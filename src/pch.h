// Precompiled header: the heavy third-party headers, parsed once per target.
#pragma once
#include "torch_api.h"
#include <yaml-cpp/yaml.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string>
#include <vector>
#include <map>
#include <memory>
#include <functional>
