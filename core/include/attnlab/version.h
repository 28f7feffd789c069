#pragma once
// AttnLab's version (the CMake project version): the one owner of it.
namespace attnlab {
const char* version();
}
