#pragma once
#include <string>
#include <vector>

namespace attnlab {
// All lines of a text file, plain or gzip-compressed; throws InputError naming the file.
std::vector<std::string> readTextLines(const std::string& path);
}  // namespace attnlab
