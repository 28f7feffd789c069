/* The C interface of libattnlab_spm, the only code that calls SentencePiece.
 * Loaded by tokenizer.cpp with dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND) so that its
 * protobuf 3.14 symbols never meet LibTorch's protobuf 3.21.
 * Memory returned through out-parameters is malloc'd by the module and released with
 * attnlab_spm_free; error strings likewise. Functions returning int: 0 = success. */
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNLAB_SPM_ABI_VERSION 3
/* The module is built with hidden visibility; only these functions are exported. */
#pragma GCC visibility push(default)

typedef struct attnlab_spm attnlab_spm;

int attnlab_spm_abi_version(void);
attnlab_spm* attnlab_spm_load(const char* path, char** error);
void attnlab_spm_destroy(attnlab_spm* sp);
void attnlab_spm_free(void* p);

/* ids: *n ints. pieces and surfaces: *n NUL-terminated strings back to back, *pieces_len and
 * *surfaces_len bytes in all (surface = the span of the input text a piece covers). */
int attnlab_spm_encode(const attnlab_spm* sp, const char* text, size_t text_len, int** ids, size_t* n, char** pieces,
                       size_t* pieces_len, char** surfaces, size_t* surfaces_len, char** error);
int attnlab_spm_decode(const attnlab_spm* sp, const int* ids, size_t n, char** text, size_t* text_len, char** error);
/* pieces: n NUL-terminated strings back to back (pieces_len bytes). As SentencePiece's
 * DecodePieces: a piece the model lacks is written as itself. (ABI 2) */
int attnlab_spm_decode_pieces(const attnlab_spm* sp, const char* pieces, size_t pieces_len, size_t n, char** text,
                              size_t* text_len, char** error);
int attnlab_spm_vocab_size(const attnlab_spm* sp);
/* which: 0 pad, 1 unk, 2 bos, 3 eos; -1 when the model has none. */
int attnlab_spm_special_id(const attnlab_spm* sp, int which);
int attnlab_spm_is_byte(const attnlab_spm* sp, int id);
int attnlab_spm_is_unknown(const attnlab_spm* sp, int id);
char* attnlab_spm_id_to_piece(const attnlab_spm* sp, int id);
int attnlab_spm_piece_to_id(const attnlab_spm* sp, const char* piece);
/* Trains a model on the lines of the files inputs[0..n_inputs), one sentence a line, with
 * SentencePieceTrainer's flags in args ("--vocab_size=8000 ...": no --input, no --model_prefix),
 * and returns the model file's bytes in *model (*model_len bytes); nothing is written. The module
 * reads the files itself (a SentenceIterator), so the model names no path: its trainer_spec's
 * input and model_prefix stay empty. (ABI 3) */
int attnlab_spm_train(const char* args, const char* const* inputs, size_t n_inputs, char** model, size_t* model_len,
                      char** error);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
