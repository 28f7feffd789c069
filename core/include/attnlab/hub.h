#pragma once
// Models by Hugging Face hub name (`ORG/NAME[@REVISION]`), through the cache every tool of the
// ecosystem shares (~/.cache/huggingface/hub, laid out exactly as huggingface_hub lays it out, so
// a model transformers downloaded opens with no network and one AttnLab downloads is seen by
// transformers), downloading what is missing over HTTPS (libcurl, certificates checked).
//
// Errors (attnlab/errors.h): InputError for a name that is not a hub name; ConfigError for
// HubOptions without a cache folder; PackageError, naming
// the cause, for everything that keeps the model from being got: no network (curl's words and the
// host), an unknown repository or revision, a gated or private model without an accepted token,
// offline with files missing from the cache (named), a file failing its sha256 (name, expected,
// got), a file that cannot be written (the path and the system's reason); CancelledError when the
// progress callback returned false.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// A model on the hub: `repo` is "ORG/NAME"; `revision` a branch, a tag or a 40-hex commit.
struct HubModelName {
    std::string repo;
    std::string revision = "main";
};

// "ORG/NAME" or "ORG/NAME@REVISION" as a hub name, or nothing when it is not one:
// - exactly one '/'; ORG and NAME each 1–96 of [A-Za-z0-9._-], neither starting nor ending with
//   '-' or '.', no ".." or "--" anywhere (huggingface_hub refuses those: "--" separates the parts
//   of the cache folder's name), NAME not ending in ".git";
// - REVISION (after the first '@'): 1–255 of [A-Za-z0-9._/+-], no "..", no empty or '.'-led
//   part between '/' ("refs/pr/1" is one), not ending in ".lock" — it names a file under refs/.
// A path to a folder never reaches this: callers try the folder first.
std::optional<HubModelName> parseHubModelName(const std::string& text);

// "ORG/NAME" or "ORG/NAME@REVISION" (revision "main" left out), for messages and menus.
std::string hubModelNameString(const HubModelName& name);

// Where and how to get models. hubOptionsFromEnvironment() fills it as huggingface_hub would.
struct HubOptions {
    // The hub's base URL, no trailing '/' (HF_ENDPOINT; https://huggingface.co).
    std::string endpoint = "https://huggingface.co";
    // The cache folder holding models--ORG--NAME/ (HF_HUB_CACHE; HF_HOME/hub;
    // $XDG_CACHE_HOME/huggingface/hub; ~/.cache/huggingface/hub). Created when first written;
    // empty is refused (ConfigError from hubSnapshot, nothing from cachedHubSnapshot).
    std::string cache_dir;
    // Sent as "Authorization: Bearer <token>" to the endpoint's host only, never to a host a
    // redirect leads to (the CDN); empty: none (HF_TOKEN; the file HF_TOKEN_PATH; HF_HOME/token).
    std::string token;
    // No network at all: the cache or an error naming what is missing (HF_HUB_OFFLINE).
    bool offline = false;
    // Seconds to wait for a connection to be made before giving up.
    long connect_timeout_s = 10;
    // A transfer slower than `min_bytes_per_second` averaged over `slow_window_s` seconds is abandoned
    // with a message naming the host and the rate (a stalled network, or a server dripping bytes);
    // what it got is kept to resume from. ATTNLAB_HUB_MIN_RATE (bytes/s) and ATTNLAB_HUB_SLOW_WINDOW
    // (seconds) set them; 0 for either turns the check off.
    long min_bytes_per_second = 1024;
    long slow_window_s = 60;
    // Caps on what one model may make AttnLab fetch, checked against the listing and the files'
    // declared sizes before the first byte: a repository cannot make it fetch without limit.
    // ATTNLAB_HUB_MAX_FILES, ATTNLAB_HUB_MAX_BYTES set them.
    int max_files = 64;
    int64_t max_total_bytes = int64_t(64) << 30;  // 64 GiB: NLLB-200 3.3B is 17.6 GB
};

// HubOptions from the environment, as huggingface_hub reads it:
// - endpoint: HF_ENDPOINT, trailing '/' removed; else https://huggingface.co;
// - cache_dir: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE (its older name), else HF_HOME/hub, else
//   $XDG_CACHE_HOME/huggingface/hub, else $HOME/.cache/huggingface/hub;
// - token: HF_TOKEN, else the file HF_TOKEN_PATH, else the file HF_HOME/token (HF_HOME defaulting
//   as above to $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface: where `huggingface-cli login`
//   writes it); surrounding white space removed; empty when none;
// - offline: HF_HUB_OFFLINE is 1, ON, YES or TRUE (any case);
// - AttnLab's own limits: ATTNLAB_HUB_MIN_RATE (bytes a second), ATTNLAB_HUB_SLOW_WINDOW (seconds),
//   ATTNLAB_HUB_MAX_FILES, ATTNLAB_HUB_MAX_BYTES, each a whole number; ConfigError naming the variable
//   for anything else.
HubOptions hubOptionsFromEnvironment();

// Where a download stands, handed to a HubProgressCallback.
struct HubProgress {
    std::string file;             // the file being downloaded ("model.safetensors"); empty before the first
    int64_t file_done = 0;        // bytes of it on disk (a resumed download starts above 0)
    int64_t file_total = 0;       // its size; 0 when the server did not say
    int64_t done = 0;             // bytes on disk of every file this call downloads
    int64_t total = 0;            // their sizes together (files already in the cache not counted)
    double bytes_per_second = 0;  // transfer rate since this call began (resumed bytes not counted)
    double seconds_left = -1;     // estimated from that rate; -1 while unknown
    int files_done = 0;           // files of this call completed
    int files_total = 0;          // files this call downloads
    // Set on one call only: something the user should be told, on a line of its own (a partial file
    // or a lock file in the cache that was a link or not this user's, set aside); empty otherwise.
    std::string notice;
};

// Called on the downloading thread at most about ten times a second while bytes arrive or a request
// waits (before the first file, while the files are listed, with files_total 0), at the start and at
// the end of every file. Returning false cancels: the transfer stops at once, the
// part received stays (blobs/ETAG.incomplete) for the next call to resume, and CancelledError is
// thrown. An empty callback is never called.
using HubProgressCallback = std::function<bool(const HubProgress&)>;

// The local snapshot folder (<cache>/models--ORG--NAME/snapshots/<COMMIT>) holding every file the
// model needs, downloading what is missing:
// 1. the cache is read first (cachedHubSnapshot): a complete snapshot is returned with no request
//    at all — a branch once downloaded is not checked for newer commits (delete its refs/ file,
//    or name a commit, to get another);
// 2. offline: PackageError naming the files missing from the cache;
// 3. the file list of the revision (its commit), the files a translation model needs chosen from
//    it (hub_client.h: selectModelFiles), each fetched at that commit into blobs/ (resumed where
//    cut, sha256 checked for large files), a file already in blobs/ never fetched again;
// 4. the snapshot's links, then refs/REVISION (atomically) written once every file is complete.
// Blocking; call it off the GUI thread. Throws as the header comment says.
std::string hubSnapshot(const HubModelName& name, const HubOptions& options, const HubProgressCallback& progress = {});

// What getting a model would fetch, from the repository's file list alone (one request, nothing written):
// for asking a person before a download they did not ask for themselves (a lesson's or a session's model).
struct HubModelListing {
    HubModelName name;
    std::string commit;              // the revision's commit
    std::vector<std::string> files;  // the files hubSnapshot would get (selectModelFiles; an index's shards
                                     // estimated as the listed weight files of its format)
    int64_t total_bytes = -1;        // their sizes as listed; -1 when the listing gives none
    int64_t cached_bytes = 0;        // of those, already in the cache (not fetched again)
    std::string licence;             // the model card's licence (cardData.license, else a "license:" tag); "" when none
};

// The listing of `name` (GET /api/models/ORG/NAME/revision/REV?blobs=true). Throws PackageError as
// hubSnapshot does (no network, unknown repository, a gated model, more files or bytes than the caps);
// CancelledError when `keep_going` returns false. Offline: PackageError.
HubModelListing hubModelListing(const HubModelName& name, const HubOptions& options,
                                const std::function<bool()>& keep_going = {});

// The snapshot folder when the cache holds the model complete (no network, nothing written):
// refs/REVISION (or the commit named) leads to a snapshot with config.json and weights
// (model.safetensors; every shard of model.safetensors.index.json; pytorch_model.bin and its
// shards; CTranslate2's model.bin), each resolving to a file. Nothing otherwise.
std::optional<std::string> cachedHubSnapshot(const HubModelName& name, const HubOptions& options);

// The model a snapshot folder of the cache holds (<cache>/models--ORG--NAME/snapshots/<COMMIT>[/...]):
// ORG/NAME, with the revision a refs/ file names for that commit ("main" first), else the commit.
// Nothing for a folder outside such a layout. For menus that show a model by name, not by path.
std::optional<HubModelName> hubNameOfSnapshot(const std::string& dir);

// One model of the catalog File › Get a model… lists (resources/hub_catalog.json, format 1).
struct HubCatalogEntry {
    std::string repo;                 // "Helsinki-NLP/opus-mt-de-en": a hub name
    std::string family;               // "OPUS-MT", "NLLB-200", ...
    std::vector<std::string> source;  // ISO 639-1 codes; {"*"}: the model's many languages
    std::vector<std::string> target;
    std::string languages;   // for people: "German → English", "200 languages"
    int64_t size_bytes = 0;  // what a download fetches
    bool size_is_estimate = false;
    std::string licence;  // as the model card states it ("unspecified" where it does not)
    std::string notes;    // how to use it (a target-language token, ...)
};

// Parses the catalog's text; PackageError naming `origin` and the entry at fault (a missing field, a
// repository that is not a hub name, an unknown format).
std::vector<HubCatalogEntry> parseHubCatalog(const std::string& json_text, const std::string& origin);
// The catalog shipped with AttnLab (the source tree's resources/, or share/attnlab/ installed, beside the
// models: CMakeLists.txt installs it there); empty when it cannot be found.
inline constexpr const char* kHubCatalogFile = "hub_catalog.json";
std::string bundledHubCatalogPath();

}  // namespace attnlab
