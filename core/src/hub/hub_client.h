#pragma once
// HTTP to the Hugging Face hub through libcurl (easy interface, one handle per client so that
// connections are reused; TLS certificates and host names checked, as curl does by default and
// never switched off; http and https only). Implements attnlab::hubSnapshot (attnlab/hub.h).
//
// Requests, as huggingface_hub makes them:
// - the file list: GET {endpoint}/api/models/{repo}/revision/{revision, %-encoded} → "sha" (the
//   commit) and "siblings" [{"rfilename"}];
// - a file's metadata: HEAD {endpoint}/{repo}/resolve/{commit}/{file} without following
//   redirects: X-Repo-Commit, the ETag (X-Linked-Etag first, then ETag) and the size
//   (X-Linked-Size, then Content-Length); a large (LFS) file answers 302 to its CDN, and the GET
//   goes there; a redirect to the same host without an X-Linked-Etag (a renamed repository) is
//   followed with HEAD again;
// - its bytes: GET of that location, "Range: bytes=N-" when blobs/ETAG.incomplete has N bytes
//   (206 appends; a 200 starts the file over), redirects followed one by one (at most 10); never
//   more bytes than the file's declared size (X-Linked-Size / Content-Length of the HEAD, the
//   listing's size), and never slower than HubOptions' rate over its window.
// Files are asked for by commit, not by branch, so that one snapshot never mixes two commits.
//
// The token: "Authorization: Bearer …" goes only to a URL of the endpoint's own scheme, host and
// port. Redirects are followed here, not by curl, so this holds whatever curl's version does with
// custom headers (curl 7.58+ also drops them on a host change, but a port change was only fixed in
// 7.83; this does not depend on it).
#include "hub/download_target.h"
#include "hub/hub_cache.h"

#include <attnlab/hub.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

typedef void CURL;

namespace attnlab::hub {

// `s` %-encoded for a URL path: everything but [A-Za-z0-9._~-] (and '/' when keep_slash), so
// "refs/pr/1" as one path segment is "refs%2Fpr%2F1".
std::string urlEncode(const std::string& s, bool keep_slash);

// What one request got back (the last response when redirects are not followed).
struct HttpResponse {
    std::string url;  // the URL that answered
    long status = 0;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;                            // an error's or the file list's body, bounded
    std::string redirect;                        // the absolute URL a 3xx points to
    int curl_code = 0;                           // CURLcode; 0 when the transfer completed
    std::string curl_error;                      // curl's words for a failure
};

// What the hub says about one file at one commit.
struct HubFileInfo {
    HubModelName name;     // the model it belongs to (for messages)
    std::string file;      // its path in the repository
    std::string etag;      // normalised (normalizeEtag): the blob's name
    int64_t size = -1;     // -1 when not said
    std::string location;  // where to GET its bytes (the CDN for LFS files)
};

// The answer to GET /api/models/ORG/NAME/revision/REV?blobs=true: its commit ("sha", 40 hex digits), its
// files' names ("siblings"[].rfilename) with their sizes where listed ("size", else "lfs"."size"), and the
// model card's licence ("cardData"."license", else a "license:X" tag). PackageError beginning with `origin`
// for an answer without a commit.
struct RepoInfo {
    std::string commit;
    std::vector<std::string> files;
    std::map<std::string, int64_t> sizes;  // only the files whose size is listed
    std::string licence;
};
RepoInfo parseRepoInfo(const std::string& body, const std::string& origin);

// A file got from any URL (HubClient::downloadUrl: an Argos package), as messages name it.
struct UrlDownload {
    std::string url;
    std::string file;         // its name ("translate-en_de-1_9.argosmodel")
    int64_t size = -1;        // its declared size; -1 when none is known
    std::string cap_setting;  // what sets the cap on a file of no declared size, for messages
};

class HubClient {
public:
    explicit HubClient(const HubOptions& options);
    HubClient(const HubClient&) = delete;
    HubClient& operator=(const HubClient&) = delete;
    ~HubClient();

    // The commit `name` resolves to and the repository's files; throws PackageError. `tick` is asked about
    // once a second or more while the request waits (a connection, a slow answer): false cancels
    // (CancelledError), so that a cancel is prompt in every phase, not only while bytes arrive.
    RepoInfo repoFiles(const HubModelName& name, const std::function<bool()>& tick = {});
    // HEAD of one file at `commit`; throws PackageError; `tick` as for repoFiles.
    HubFileInfo fileInfo(const HubModelName& name, const std::string& commit, const std::string& file,
                         const std::function<bool()>& tick = {});
    // Its bytes appended to `blob` (resumed with Range), `tick` called while they arrive (false
    // cancels: CancelledError), never more than `max_size` bytes in all (the declared size: a body
    // that goes on past it is cut there and not kept). Throws PackageError when cut, naming what was
    // kept, and when slower than the options' rate over their window, naming the host and the rate.
    void download(const HubFileInfo& info, IncompleteBlob& blob, int64_t max_size, const std::function<bool()>& tick);

    // The same client for files that are not the hub's (an Argos index and its packages); no token is sent
    // unless the URL is the endpoint's. getSmall: GET of `url`, redirects followed (at most 10), its body of at
    // most `max_bytes`; PackageError naming `what` and the host for no answer, an HTTP status other than 200 or
    // a larger body. `tick` as for repoFiles.
    std::string getSmall(const std::string& url, const std::string& what, size_t max_bytes,
                         const std::function<bool()>& tick = {});
    // download() for any URL, with the same guards: `target` resumed with Range from its size, never more
    // than `max_size` bytes, the options' minimum rate, redirects followed (at most 10), `tick` cancels.
    void downloadUrl(const UrlDownload& file, DownloadTarget& target, int64_t max_size,
                     const std::function<bool()>& tick);

private:
    struct Request;
    HttpResponse perform(const Request& request);
    // perform(), then again at the redirect's target while `follow` says so (at most 10 times).
    HttpResponse performFollowing(Request request, const std::function<bool(const HttpResponse&)>& follow);
    // What download() and downloadUrl() share: `source.what` names the file for a failed connection (`hub`: with
    // the HF_HUB_OFFLINE hint), `status` throws for an HTTP error.
    struct TransferSource {
        std::string what;
        bool hub = false;
    };
    void transfer(const UrlDownload& file, DownloadTarget& target, int64_t max_size, const std::function<bool()>& tick,
                  const TransferSource& source, const std::function<void(const HttpResponse&)>& status);
    [[noreturn]] void throwTooSlow(const HttpResponse& r, const UrlDownload& file, int64_t kept, int64_t got,
                                   std::chrono::steady_clock::time_point began) const;
    [[noreturn]] void throwStatus(const HttpResponse& r, const HubModelName& name, const std::string& what) const;
    bool sameOriginAsEndpoint(const std::string& url) const;
    std::string m_endpoint;
    std::string m_token;
    long m_connect_timeout_s;
    long m_min_bytes_per_second;
    long m_slow_window_s;
    CURL* m_curl = nullptr;
};

}  // namespace attnlab::hub
