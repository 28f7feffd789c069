#include <attnlab/errors.h>
#include <attnlab/training_log.h>

#include "util/text.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace attnlab {
namespace {
std::vector<std::string> splitTabs(const std::string& line) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t tab = line.find('\t', start);
        out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) return out;
        start = tab + 1;
    }
}
}  // namespace

bool TrainingLog::has(const std::string& column) const {
    return std::find(columns.begin(), columns.end(), column) != columns.end();
}

std::vector<double> TrainingLog::column(const std::string& name) const {
    const auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end()) throw InputError(path + ": no column '" + name + "'");
    const size_t j = static_cast<size_t>(it - columns.begin());
    std::vector<double> out;
    out.reserve(rows.size());
    for (const auto& r : rows) out.push_back(r[j]);
    return out;
}

TrainingLog readTrainingLog(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError(path + ": cannot be opened");
    TrainingLog log;
    log.path = path;
    std::string line;
    size_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        auto fields = splitTabs(line);
        if (log.columns.empty()) {
            for (const auto& f : fields)
                if (f.empty())
                    throw InputError(path + ": line " + std::to_string(number) +
                                     ": an empty column name in the header");
            log.columns = std::move(fields);
            continue;
        }
        if (fields.size() != log.columns.size())
            throw InputError(path + ": line " + std::to_string(number) + " has " + std::to_string(fields.size()) +
                             " fields, the header has " + std::to_string(log.columns.size()));
        std::vector<double> row;
        row.reserve(fields.size());
        for (size_t j = 0; j < fields.size(); ++j) {
            const std::string& f = fields[j];
            char* end = nullptr;
            const double v = f.empty() ? 0.0 : std::strtod(f.c_str(), &end);
            if (f.empty() || end != f.c_str() + f.size())
                throw InputError(path + ": line " + std::to_string(number) + ", column '" +
                                 util::forMessage(log.columns[j]) + "': '" + util::forMessage(f) + "' is not a number");
            row.push_back(v);
        }
        log.rows.push_back(std::move(row));
    }
    if (in.bad()) throw InputError(path + ": read error");
    if (log.columns.empty()) throw InputError(path + ": empty (no header line)");
    return log;
}

}  // namespace attnlab
