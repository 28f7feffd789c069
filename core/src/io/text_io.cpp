// The public face of the corpus reader (attnlab-cli eval reads its files through it).
#include <attnlab/text_io.h>

#include "data/corpus.h"

namespace attnlab {

std::vector<std::string> readTextLines(const std::string& path) { return data::readLines(path); }

}  // namespace attnlab
