#include "training/checkpoint_store.h"

#include "package/package_io.h"
#include "util/atomic_file.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/run_layout.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace attnlab::training {
namespace fs = std::filesystem;

namespace {
std::string serialize(const std::function<void(std::ostream&)>& f) {
    std::ostringstream out(std::ios::binary);
    f(out);
    return out.str();
}

std::string readWhole(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    if (!in && !in.eof()) throw PackageError(p.string() + ": cannot be read");
    return s.str();
}

// The state, and the attention history up to this checkpoint when the run records one.
package::SaveOptions withState(const RunState& state, const CheckpointStore::Contents& c) {
    package::SaveOptions so;
    so.extra_files[run_layout::kTrainerState] = runStateToJson(state, c.options);
    if (!c.history.empty()) so.extra_files[package_files::kAttentionHistory] = c.history;
    return so;
}
}  // namespace

CheckpointStore::CheckpointStore(const std::string& run_dir)
    : m_run_dir(run_dir), m_dir((fs::path(run_dir) / run_layout::kCheckpoints).string()) {
    fs::create_directories(m_dir);
    // A run killed while it wrote a checkpoint leaves a staging folder (util::writeDirectory). A
    // save removes the leftovers beside it, but a name the resumed run never writes again (best,
    // an epoch) would keep one for good (tst_kill saw it): every dead writer's staging goes now.
    util::removeStaleStagingIn(m_dir);
    // Checkpoints written before AttnLab marked its folders (.attnlab-package) are adopted: the
    // run's checkpoints/ is AttnLab's own layout, and a resumed run replaces them.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(m_dir, ec))
        if (e.is_directory(ec) && !e.is_symlink(ec) && fs::is_regular_file(e.path() / package_files::kConfig, ec))
            util::markWrittenByAttnlab(e.path().string());
}

std::string CheckpointStore::latestDir() const { return (fs::path(m_dir) / run_layout::kLatest).string(); }
std::string CheckpointStore::bestDir() const { return (fs::path(m_dir) / run_layout::kBest).string(); }
bool CheckpointStore::hasLatest() const {
    return fs::is_regular_file(fs::path(latestDir()) / run_layout::kTrainerState);
}
bool CheckpointStore::hasBest() const { return fs::is_regular_file(fs::path(bestDir()) / package_files::kWeights); }

RunState CheckpointStore::readLatestState(TrainingOptions* options) const {
    const fs::path state = fs::path(latestDir()) / run_layout::kTrainerState;
    if (!hasLatest()) throw InputError(state.string() + ": missing file: nothing to resume in " + m_run_dir);
    return runStateFromJson(readWhole(state), state.string(), options);
}

void CheckpointStore::restoreLatest(torch::optim::Adam& optimizer, torch::Device device) const {
    const fs::path dir = latestDir();
    try {
        torch::load(optimizer, (dir / run_layout::kOptimizerState).string(), device);
        std::vector<torch::Tensor> rng;
        torch::load(rng, (dir / run_layout::kRngState).string());
        at::Generator gen = at::detail::getDefaultCPUGenerator();
        gen.set_state(rng.at(0));
    } catch (const c10::Error& e) {
        throw PackageError(dir.string() + ": corrupt optimizer or random state: " + e.what_without_backtrace());
    } catch (const std::out_of_range&) {
        throw PackageError(dir.string() + ": corrupt optimizer or random state: no generator state in " +
                           run_layout::kRngState);
    }
}

void CheckpointStore::saveLatest(const Contents& c, const RunState& state, torch::optim::Adam& optimizer) const {
    auto so = withState(state, c);
    so.extra_files[run_layout::kOptimizerState] = serialize([&](std::ostream& os) { torch::save(optimizer, os); });
    so.extra_files[run_layout::kRngState] = serialize([&](std::ostream& os) {
        torch::save(std::vector<torch::Tensor>{at::detail::getDefaultCPUGenerator().get_state()}, os);
    });
    package::savePackage(latestDir(), c.config, c.model, c.tokenizer_model, so);
}

void CheckpointStore::saveBest(const Contents& c, const RunState& state) const {
    package::savePackage(bestDir(), c.config, c.model, c.tokenizer_model, withState(state, c));
}

void CheckpointStore::saveEpoch(const Contents& c, const RunState& state, int keep) const {
    const fs::path dir = fs::path(m_dir) / run_layout::epochCheckpointName(state.epoch);
    package::savePackage(dir.string(), c.config, c.model, c.tokenizer_model, withState(state, c));
    util::removeTree((fs::path(m_dir) / run_layout::epochCheckpointName(state.epoch - keep)).string());
}

}  // namespace attnlab::training
