#pragma once
// The Hugging Face cache on disk, exactly as huggingface_hub lays it out (file_download.py:
// repo_folder_name, hf_hub_download, _create_symlink), so both read and write the same folders:
//
//   <cache>/models--ORG--NAME/refs/<REVISION>          the commit sha, no newline ("refs/pr/1" nests)
//   <cache>/models--ORG--NAME/blobs/<ETAG>             a file's bytes, named by its ETag (no quotes,
//                                                      no W/): sha256 for LFS files, git sha1 else
//   <cache>/models--ORG--NAME/blobs/<ETAG>.incomplete  a download under way or cut (resumed)
//   <cache>/models--ORG--NAME/snapshots/<COMMIT>/<PATH>  relative links to ../../blobs/<ETAG> (one
//                                                      more ../ per folder in PATH); copies where a
//                                                      link cannot be made (as on Windows)
//   <cache>/.locks/models--ORG--NAME/<ETAG>.lock       flock'ed while a blob is written (the file
//                                                      huggingface_hub's FileLock locks, so the two
//                                                      never write one blob at once)
//
// Also: which files a translation model needs (selectModelFiles, the one rule), and whether a
// snapshot holds them all (missingFromSnapshot). Implements the public functions of
// attnlab/hub.h that need no network: parseHubModelName, hubModelNameString,
// hubOptionsFromEnvironment, cachedHubSnapshot.
#include <attnlab/hub.h>

#include "hub/cache_folder.h"
#include "hub/download_target.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace attnlab::hub {

bool isCommitHash(const std::string& s);  // 40 lower-case hex digits
bool isSha256Hex(const std::string& s);   // 64 lower-case hex digits (an LFS file's ETag)

// The ETag as the cache names blobs: without a W/ prefix and quotes. Nothing when what is left is
// not 1–128 of [A-Za-z0-9_-] (it becomes a file name: a server's "../x" must not).
std::optional<std::string> normalizeEtag(const std::string& header_value);

// "models--ORG--NAME" for "ORG/NAME".
std::string repoFolderName(const std::string& repo);

// The files of a repository (its siblings' names) that a translation model needs, sorted, by the exact
// names AttnLab's loaders open (no pattern, no subfolder: a repository cannot make it fetch what it
// does not read):
// - when present: config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json,
//   added_tokens.json, the tokenizers' files (MarianMT's source.spm, target.spm and vocab.json; the
//   multilingual families' sentencepiece.bpe.model; CTranslate2's shared_/source_/target_vocabulary
//   .json or .txt and sentencepiece.model; an AttnLab package's tokenizer.model), Argos' metadata.json
//   and an AttnLab package's examples.tsv, confidence.json, alignments.txt;
// - one set of weights, the first present of: model.safetensors; model.safetensors.index.json
//   (its shards are added from it once read: shardsOfIndex); pytorch_model.bin;
//   pytorch_model.bin.index.json; CTranslate2's model.bin.
// Never TensorFlow, Flax, Rust, ONNX or checkpoint files, nor tokenizer.json, vocab.txt, merges.txt:
// AttnLab reads none of them.
std::vector<std::string> selectModelFiles(const std::vector<std::string>& siblings);

// The weights formats in the order they are preferred: the loader's (formats/huggingface/hf_config.h: kHfWeightFiles),
// then CTranslate2's model.bin.
const std::vector<std::string>& weightFiles();
bool isWeightsIndex(const std::string& file);  // model.safetensors.index.json, pytorch_model.bin.index.json

// The shard files a weights index (its JSON text) names in "weight_map", sorted, each once.
// Throws PackageError naming `index_name` when the JSON is not an index or a shard is not a plain
// top-level file name.
std::vector<std::string> shardsOfIndex(const std::string& index_json, const std::string& index_name);

// What a snapshot folder lacks for a model (config.json, weights, a shard its index names), as
// phrases for a message; empty when complete. Entries must resolve to regular files.
std::vector<std::string> missingFromSnapshot(const std::string& snapshot_dir);

// One repository's folder in the cache. Paths for reading and for messages; every write goes through
// a CacheFolder (cache_folder.h), so that nothing planted in a shared cache can redirect it.
class RepoCache {
public:
    RepoCache(const std::string& cache_dir, const std::string& repo);
    const std::string& folder() const { return m_folder; }
    std::string blobPath(const std::string& etag) const { return m_folder + "/blobs/" + etag; }
    std::string incompletePath(const std::string& etag) const { return blobPath(etag) + ".incomplete"; }
    std::string snapshotDir(const std::string& commit) const { return m_folder + "/snapshots/" + commit; }
    std::string refPath(const std::string& revision) const { return m_folder + "/refs/" + revision; }

    // The folder `relative` of the repository (".": itself), opened (created) without following links.
    CacheFolder open(const std::string& relative) const;
    // .locks/models--ORG--NAME
    CacheFolder openLocks() const;

    // The commit `revision` stands for in the cache: itself when it is a commit, else refs/REVISION's
    // content when that is a regular file holding a commit; nothing otherwise (never blocks on a FIFO).
    std::optional<std::string> commitFor(const std::string& revision) const;
    // refs/REVISION := commit, atomically (an unguessable temporary renamed over it).
    void writeRef(const std::string& revision, const std::string& commit) const;
    // snapshots/COMMIT/FILE -> ../../blobs/ETAG (relative), made only where nothing is; a copy of
    // the blob where the file system refuses links.
    void linkSnapshotFile(const std::string& commit, const std::string& file, const std::string& etag) const;

private:
    std::string m_cache;
    std::string m_name;
    std::string m_folder;
};

// An exclusive flock on a blob's lock file, held while the object lives; waits for another
// process (AttnLab or huggingface_hub) writing the same blob, asking `keep_waiting` every 100 ms
// (false: give up, CancelledError). The lock file is opened read-only, without following a link,
// and must be a regular file (another user's is fine: it is only locked); anything else is set
// aside (notice()).
class BlobLock {
public:
    BlobLock(const RepoCache& cache, const std::string& etag, const std::function<bool()>& keep_waiting);
    BlobLock(const BlobLock&) = delete;
    BlobLock& operator=(const BlobLock&) = delete;
    ~BlobLock();
    const std::string& notice() const { return m_notice; }

private:
    int m_fd = -1;
    std::string m_notice;
};

// The digest finished bytes must have: OpenSSL's name for it ("sha256", "md5", ...) and its lower-case hex.
struct ExpectedDigest {
    std::string algorithm;
    std::string hex;
};

// blobs/ETAG.incomplete, appended to while a file arrives; renamed to blobs/ETAG when finished.
// With `check_sha256` (an LFS file, whose ETag is its sha256) the bytes are hashed as written,
// the partial bytes already there first, and finish() refuses bytes that do not match.
// A partial file already there is resumed only when it is a regular file of this user's with one
// link; anything else (a link, a FIFO, another user's file) is set aside, never written through,
// and notice() says so. Every failure is a PackageError naming the path and the system's reason.
// The second constructor is the same for any folder (an Argos package's download): NAME.incomplete in
// `folder`, renamed to NAME, checked against `digest` when there is one.
class IncompleteBlob : public DownloadTarget {
public:
    // `keep_going` is asked every MiB while the bytes already there are hashed (a partial file of gigabytes
    // takes seconds): false stops with CancelledError.
    IncompleteBlob(const RepoCache& cache, const std::string& etag, bool check_sha256,
                   const std::function<bool()>& keep_going = {});
    IncompleteBlob(CacheFolder folder, const std::string& name, const std::optional<ExpectedDigest>& digest,
                   const std::function<bool()>& keep_going = {});
    IncompleteBlob(const IncompleteBlob&) = delete;
    IncompleteBlob& operator=(const IncompleteBlob&) = delete;
    ~IncompleteBlob() override;
    int64_t size() const override { return m_size; }
    // What was set aside to begin, for the user; empty when nothing was.
    const std::string& notice() const { return m_notice; }
    // Empties the file: the server answered a Range request with the whole file.
    void restart() override;
    void write(const char* data, size_t bytes) override;
    // Syncs, checks the size (when expected_size >= 0) and the digest, renames to blobs/ETAG (NAME).
    // `file` names the repository's file in messages. A mismatch removes the bytes and throws.
    void finish(const std::string& file, int64_t expected_size);
    // Removes what this call wrote (a write failed, the server sent too much: nothing half-written is left).
    void discard() override;

private:
    void hashExisting(const std::function<bool()>& keep_going);
    void open();
    std::string openExisting();
    void removeFile();
    CacheFolder m_blobs;
    std::string m_name;  // ETAG.incomplete
    std::string m_path;
    std::string m_final;  // ETAG (NAME): what it is renamed to when finished
    std::optional<ExpectedDigest> m_digest;
    std::string m_notice;
    int m_fd = -1;
    int64_t m_size = 0;
    int64_t m_found = 0;             // its size when opened (a partial file left by a cut download, ours or not)
    bool m_created = false;          // this object made the file (else it is resumed, and never deleted)
    evp_md_ctx_st* m_sha = nullptr;  // EVP_MD_CTX
};

}  // namespace attnlab::hub
