#pragma once
// What the harnesses share: a per-process scratch file for readers that take a path.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace attnlab::fuzz {

inline std::string scratch(const std::string& name) {
    return "/dev/shm/attnlab-fuzz-" + std::to_string(::getpid()) + "-" + name;
}

inline void writeBytes(const std::string& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

}  // namespace attnlab::fuzz
