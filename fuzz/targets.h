#pragma once
// The fuzz targets (fuzz/targets.cpp), shared by the libFuzzer harnesses and the regression test.
#include <cstddef>
#include <cstdint>

namespace attnlab::fuzz {

// Between the files of a fuzz_package input (scripts/make_fuzz_seeds.py writes the same).
inline constexpr const char* kPackagePartSeparator = "\n--attnlab-fuzz-part--\n";

void safetensorsFile(const uint8_t* data, size_t size);   // model.safetensors header and offsets
void configJson(const uint8_t* data, size_t size);        // config.json
void confidenceJson(const uint8_t* data, size_t size);    // confidence.json
void lessonFile(const uint8_t* data, size_t size);        // lesson and session JSON
void trainingLog(const uint8_t* data, size_t size);       // training_log.tsv / steps.tsv
void corpusFile(const uint8_t* data, size_t size);        // corpus files, plain or gzip
void tokenizerModel(const uint8_t* data, size_t size);    // tokenizer.model through the SentencePiece module
void examplesAndGold(const uint8_t* data, size_t size);   // examples.tsv + alignments.txt, gold files
void packageDirectory(const uint8_t* data, size_t size);  // config + tokenizer + weights through Translator
void attentionHistory(const uint8_t* data, size_t size);  // attention_history.bin
void torchPickle(const uint8_t* data, size_t size);       // data.pkl of a pytorch_model.bin (the restricted unpickler)
void torchBin(const uint8_t* data, size_t size);          // a whole pytorch_model.bin: the zip container, then data.pkl
void marianConfig(const uint8_t* data, size_t size);      // a Hugging Face MarianMT config.json
void marianDirectory(const uint8_t* data, size_t size);   // a MarianMT directory: config + vocab (+ generation and
                                                          // tokenizer config) beside fixed tokenizers and weights
void safetensorsValues(const uint8_t* data, size_t size);      // a whole model.safetensors loaded for a tiny config,
                                                               // then two greedy steps
void lessonAtSize(const uint8_t* data, size_t size);           // a lesson expanded to up to the reader's caps
void multilingualDirectory(const uint8_t* data, size_t size);  // an M2M100 / NLLB / mBART directory's config,
                                                               // tokenizer files and sharded index
void ctranslate2ModelBin(const uint8_t* data, size_t size);    // a CTranslate2 model.bin: header, spec, weights
void argosArchive(const uint8_t* data, size_t size);
void argosIndex(const uint8_t* data,
                size_t size);  // the Argos package index (index.json)           // an Argos Translate .argosmodel (zip)
void hubAnswers(const uint8_t* data, size_t size);       // what the Hugging Face hub sends: a file list, a weights
void textToTranslate(const uint8_t* data, size_t size);  // a text to translate: checked, split, its language detected
                                                         // index, an ETag, a name; and the models catalog

void corpusResults(const uint8_t* data, size_t size);  // parts of a sharded corpus run (--json) merged; a heads
                                                       // document read back

}  // namespace attnlab::fuzz
