// Writes a small random-weight model package (and its SentencePiece model) for tests that must
// not include torch headers (the ui tests): make_test_package OUT_DIR
#include "fixtures.h"

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_test_package OUT_DIR\n");
        return 2;
    }
    try {
        const std::string out = argv[1];
        std::filesystem::create_directories(out + "-work");
        const std::string tok = attnlab::testing::trainTokenizer(out + "-work", 400);
        attnlab::testing::writeRandomPackage(out, tok, attnlab::testing::smallConfig(400), 7);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_test_package: %s\n", e.what());
        return 1;
    }
}
