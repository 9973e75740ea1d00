// One entry point for every model format: picks the front end for a file (the given format, else
// by extension and content) and parses it. Used by `normcore import` and Python's import_model.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "normcore/import/graph.hpp"

namespace normcore::import {

// format: "" (pick: .onnx -> onnx; .pt2 or a torch.export ZIP -> torch.export; .hlo or text
// starting with "HloModule" -> hlo; .relay or Relay text -> relay (before MLIR: `#[version` also
// starts like an MLIR attribute alias); .mlir or MLIR text -> mlir; another .txt -> Error;
// anything else -> onnx), or one of onnx, hlo, mlir, torch.export (also pt2), relay (any case).
// `option` names the format argument in messages ("--format" for the CLI, "format" for Python).
// Throws normcore::Error naming the file or the format.
Graph load_model(const std::filesystem::path& path, std::string_view format,
                 std::string_view option = "format");

// True if the text starts (after blank lines and // or # comment lines) with "HloModule".
bool looks_like_hlo(std::string_view text);

}  // namespace normcore::import
