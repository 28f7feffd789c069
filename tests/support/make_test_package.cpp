// Writes a small random-weight model package (and its SentencePiece model) for tests that must
// not include torch headers (the ui tests): make_test_package OUT_DIR. Beside it, OUT_DIR-deep: the
// other direction (en -> de) with 3 encoder and 3 decoder layers, a model to switch to; OUT_DIR-multilingual: a
// model with three languages (deu_Latn, eng_Latn, fra_Latn).
#include "fixtures.h"
#include "random_model.h"

#include "package/package_io.h"

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
    // A first argument such as --help is not a folder to write four packages beside (it once made ./--help).
    if (argc != 2 || argv[1][0] == '-' || argv[1][0] == '\0') {
        std::fprintf(stderr, "usage: make_test_package OUT_DIR\n");
        return 2;
    }
    try {
        const std::string out = argv[1];
        std::filesystem::create_directories(out + "-work");
        const std::string tok = attnlab::testing::trainTokenizer(out + "-work", 400);
        attnlab::testing::writeRandomPackage(out, tok, attnlab::testing::smallConfig(400), 7);
        attnlab::ModelConfig deep = attnlab::testing::smallConfig(400);
        deep.n_layers = 3;
        attnlab::PackageConfig reverse = attnlab::testing::packageConfig(deep);
        std::swap(reverse.source_lang, reverse.target_lang);
        auto model = attnlab::testing::randomModel(deep, 11);
        attnlab::package::savePackage(out + "-deep", reverse, model, tok, {});
        // OUT_DIR-multilingual: the same shape with NLLB-style languages (three pieces standing in for their
        // tokens), for the source language detected (tst_text_translation).
        attnlab::PackageConfig multilingual = attnlab::testing::packageConfig(attnlab::testing::smallConfig(400));
        multilingual.languages = {
            {"deu_Latn", "deu_Latn", 4}, {"eng_Latn", "eng_Latn", 5}, {"fra_Latn", "fra_Latn", 6}};
        multilingual.source_lang = "eng_Latn";
        multilingual.target_lang = "fra_Latn";
        auto multilingual_model = attnlab::testing::randomModel(attnlab::testing::smallConfig(400), 13);
        attnlab::package::savePackage(out + "-multilingual", multilingual, multilingual_model, tok, {});
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_test_package: %s\n", e.what());
        return 1;
    }
}
