#include "formats/safetensors.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "util/csv.h"
#include "util/error.h"
#include "util/signals.h"

namespace lmx {

namespace {

struct DType {
  const char* name;
  torch::ScalarType type;
  size_t bytes;
};

const std::vector<DType>& dtypes() {
  static const std::vector<DType> all = {
      {"F32",  torch::kFloat32,  4},
      {"F16",  torch::kFloat16,  2},
      {"BF16", torch::kBFloat16, 2},
      {"I64",  torch::kInt64,    8},
      {"I32",  torch::kInt32,    4},
  };
  return all;
}

bool little_endian_host() {
  const uint16_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void require_little_endian() {
  if (!little_endian_host()) throw RuntimeError("safetensors: big-endian hosts are not supported");
}

}  // namespace

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  require_little_endian();
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__" || !seen.insert(name).second)
      throw InputError(fmt::format("{}: tensor name '{}' is reserved or used twice", path, name));
    const DType* dt = nullptr;
    for (const auto& d : dtypes())
      if (d.type == tensor.scalar_type()) dt = &d;
    if (!dt)
      throw InputError(fmt::format("{}: tensor '{}' has dtype {}, not one of F32, F16, BF16, I64, I32", path, name,
                                   c10::toString(tensor.scalar_type())));
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t n = static_cast<uint64_t>(t.numel()) * dt->bytes;
    header[name] = {{"dtype", dt->name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
    data.push_back(t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data start 8-byte aligned
  const std::string tmp = path + ".tmp";
  const signals::WriteGuard guard(tmp);  // a second Ctrl-C waits for the rename
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RuntimeError(fmt::format("{}: cannot open for writing", tmp));
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : data)
      out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    out.flush();
    if (!out) {
      const int saved = errno;
      out.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);  // the previous file at path stays as it was
      throw RuntimeError(fmt::format("{}: write failed ({}; disk full?)", path, std::strerror(saved ? saved : EIO)),
                         "free disk space; the previous checkpoint, if any, is intact");
    }
  }
  // On disk before the rename makes it visible (a crash never leaves a renamed, empty file).
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) throw RuntimeError(fmt::format("{}: cannot sync to disk: {}", tmp, std::strerror(errno)));
  rename_durably(tmp, path);
}

namespace {

InputError not_safetensors(const std::string& path, const std::string& what) {
  return InputError(fmt::format("{}: not a valid safetensors file: {}", path, what),
                    "the file may be truncated or overwritten; re-create it or use another checkpoint");
}

// The JSON header of a file's bytes, refusing a key repeated in any object: nlohmann keeps the
// last of two equal keys, so a tensor named twice would load one of them silently.
nlohmann::json safetensors_header(const std::string& path, const std::string& bytes) {
  if (bytes.size() < 8)
    throw not_safetensors(path, fmt::format("{} bytes, shorter than the 8-byte header length", bytes.size()));
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8)
    throw not_safetensors(path, fmt::format("header length {} at offset 0 runs past the end of the file ({} bytes)",
                                            header_len, bytes.size()));
  nlohmann::json header;
  // Each object's keys are collected while parsing, so a repeat is an error.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  auto unique_keys = [&keys, &repeated](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    else if (event == E::object_end) keys.pop_back();
    else if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len),
                                   unique_keys);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (number overflow), ...
    throw not_safetensors(path, fmt::format("JSON header (bytes 8..{}) does not parse: {}", 8 + header_len, e.what()));
  }
  if (!repeated.empty()) throw not_safetensors(path, fmt::format("the JSON header names '{}' twice", repeated));
  if (!header.is_object()) throw not_safetensors(path, "JSON header is not an object");
  return header;
}

// One tensor's header entry, checked against the data bytes (dtype, shape, offsets), and its
// numbers copied out of the file's bytes. range receives its data offsets.
torch::Tensor read_tensor_entry(const std::string& path, const std::string& name, const nlohmann::json& entry,
                                const std::string& bytes, uint64_t data_start, std::pair<uint64_t, uint64_t>& range) {
  const uint64_t data_len = bytes.size() - data_start;
  auto bad = [&path](const std::string& what) { return not_safetensors(path, what); };
  auto where = fmt::format("tensor '{}'", name);
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    throw bad(where + " lacks dtype, shape or data_offsets");
  const auto& jd = entry["dtype"];
  const auto& js = entry["shape"];
  const auto& jo = entry["data_offsets"];
  const DType* dt = nullptr;
  for (const auto& d : dtypes())
    if (jd.is_string() && jd.get<std::string>() == d.name) dt = &d;
  if (!dt) throw bad(fmt::format("{} has unsupported dtype {} (supported: F32, F16, BF16, I64, I32)", where, jd.dump()));
  if (!js.is_array()) throw bad(where + ": shape is not an array");
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (const auto& s : js) {
    if (!s.is_number_unsigned() || s.get<uint64_t>() > (1ULL << 40)) throw bad(where + ": shape holds a non-integer or huge size");
    shape.push_back(s.get<int64_t>());
    // Checked: a wrapped product could match the data length and allocate a huge tensor.
    if (__builtin_mul_overflow(numel, s.get<uint64_t>(), &numel) || numel > data_len)
      throw bad(fmt::format("{}: shape {} holds more numbers than the file's {} data bytes", where, js.dump(), data_len));
  }
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    throw bad(where + ": data_offsets is not [begin, end]");
  const uint64_t b = jo[0].get<uint64_t>(), e = jo[1].get<uint64_t>();
  if (b > e || e > data_len)
    throw bad(fmt::format("{} data [{}, {}) lies outside the {} data bytes (file offset {}; truncated?)", where, b, e,
                          data_len, data_start + e));
  if (e - b != numel * dt->bytes)
    throw bad(fmt::format("{}: {} bytes at offset {} do not hold shape {} of {} ({} bytes)", where, e - b,
                          data_start + b, js.dump(), dt->name, numel * dt->bytes));
  auto t = torch::empty(shape, torch::TensorOptions().dtype(dt->type));
  if (e > b) std::memcpy(t.data_ptr(), bytes.data() + data_start + b, e - b);
  range = {b, e};
  return t;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  require_little_endian();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open (no such file?)", path));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json header = safetensors_header(path, bytes);
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  const uint64_t data_start = 8 + header_len;
  SafetensorsFile file;
  std::vector<std::pair<uint64_t, std::pair<std::string, torch::Tensor>>> by_offset;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw not_safetensors(path, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw not_safetensors(path, fmt::format("__metadata__ value '{}' is not a string", k));
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    std::pair<uint64_t, uint64_t> range;
    torch::Tensor t = read_tensor_entry(path, name, entry, bytes, data_start, range);
    ranges.push_back(range);
    by_offset.push_back({range.first, {name, t}});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw not_safetensors(path, fmt::format("tensor data overlap at data offset {}", ranges[i].first));
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& item : by_offset) file.tensors.push_back(std::move(item.second));
  return file;
}

}  // namespace lmx
