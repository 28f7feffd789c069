#pragma once
// libattnlab_spm, the dlopen'ed SentencePiece module (spm_api.h), loaded once per process: its
// functions, and the takeError helper for the error strings it returns. Used by the tokenizer and
// by the fuzz harness of tokenizer models.
#include "tokenizer/spm_api.h"

#include <string>

namespace attnlab::spm {

struct Module {
    std::string path;  // the file it was loaded from
    decltype(&attnlab_spm_abi_version) abi_version = nullptr;
    decltype(&attnlab_spm_load) load = nullptr;
    decltype(&attnlab_spm_destroy) destroy = nullptr;
    decltype(&attnlab_spm_free) free = nullptr;
    decltype(&attnlab_spm_encode) encode = nullptr;
    decltype(&attnlab_spm_decode) decode = nullptr;
    decltype(&attnlab_spm_decode_pieces) decode_pieces = nullptr;
    decltype(&attnlab_spm_vocab_size) vocab_size = nullptr;
    decltype(&attnlab_spm_special_id) special_id = nullptr;
    decltype(&attnlab_spm_is_byte) is_byte = nullptr;
    decltype(&attnlab_spm_is_unknown) is_unknown = nullptr;
    decltype(&attnlab_spm_id_to_piece) id_to_piece = nullptr;
    decltype(&attnlab_spm_piece_to_id) piece_to_id = nullptr;
    decltype(&attnlab_spm_train) train = nullptr;
};

// The module, loaded on first use (ATTNLAB_SPM_MODULE, next to the executable, the build and the
// install directory, in that order); throws TokenizerError naming every place tried.
const Module& module();

// The module's error string `e` (released), or `fallback` when there is none.
std::string takeError(const Module& m, char* e, const std::string& fallback);

}  // namespace attnlab::spm
