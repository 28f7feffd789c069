// training_log.tsv (and steps.tsv): the TSV reader behind the Model tab's curves.
#include "fuzz_support.h"

#include <attnlab/errors.h>
#include <attnlab/training_log.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("training_log.tsv");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        const auto log = attnlab::readTrainingLog(path);
        for (const auto& c : log.columns) (void)log.column(c);
        (void)log.column(attnlab::epoch_log::kValidBleu);
    } catch (const attnlab::Error&) {
    }
    return 0;
}
