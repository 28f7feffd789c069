#include <attnlab/version.h>

namespace attnlab {
const char* version() { return ATTNLAB_VERSION; }
}  // namespace attnlab
