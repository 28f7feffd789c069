#pragma once
// The fields of ModelConfig, listed once: name (as in the reference constructor and config.json),
// type, meaning, range. config.json reading and writing, ModelConfig::validate's ranges,
// `attnlab-cli inspect`, the model card and the GUI's Model panel all iterate this table
// (tst_package checks that it names every member of ModelConfig).
#include <attnlab/config.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace attnlab {

struct ModelConfigField {
    using Member =
        std::variant<int64_t ModelConfig::*, double ModelConfig::*, bool ModelConfig::*, std::string ModelConfig::*>;
    const char* name;
    Member member;
    const char* meaning;
    double min = 0, max = 0;   // integers and numbers: the accepted range, both ends included
    const char* choices = "";  // text: the accepted values, separated by '|'
    int since = 1;             // the package format_version that added it (older files: the default)

    const char* typeName() const;                       // "integer" | "number" | "boolean" | "text"
    std::string valueText(const ModelConfig& c) const;  // e.g. "256", "0.1", "true", "emb"
    std::string rangeText() const;                      // e.g. "[1, 256]", "emb | prj | none"
};

const std::vector<ModelConfigField>& modelConfigFields();
// The field of that name; InternalError when the table has none (a name in code, not a user's).
const ModelConfigField& findModelConfigField(const std::string& name);

}  // namespace attnlab
