#include "contributions/alti.h"

#include <attnlab/errors.h>

namespace attnlab::contributions {

Contributions altiPlus(const ForcedPass&) { throw InternalError("ALTI+ is not implemented yet"); }

}  // namespace attnlab::contributions
