#include "merge_command.h"

#include <attnlab/file_write.h>
#include <attnlab/partial_result.h>
#include <attnlab/terminal_text.h>

#include <iostream>

namespace attnlab_cli {

void addMerge(CLI::App& app, MergeCommand& m) {
    m.cmd = app.add_subcommand("merge",
                               "Put the parts of a corpus run (eval, score, translate, align, heads with --shard K/N "
                               "--json) together into the result of the whole run (docs/scale-out.md)");
    m.cmd->add_option("output", m.output, "The merged result (JSON)")->required();
    m.cmd->add_option("parts", m.parts, "Every part's --json file, in any order")->required();
}

int runMerge(const MergeCommand& m) {
    attnlab::saveToFile(m.output, attnlab::mergeCorpusResults(m.parts));
    std::cerr << "merged " << m.parts.size() << " part" << (m.parts.size() == 1 ? "" : "s") << " into "
              << attnlab::escapedForTerminal(m.output) << "\n";
    return 0;
}

}  // namespace attnlab_cli
