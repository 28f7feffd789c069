#include "hub/hub_client.h"

#include "hub/progress_tracker.h"

#include "formats/huggingface/hf_config.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>
#include <attnlab/hub_progress.h>
#include <attnlab/version.h>

#include <curl/curl.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <unordered_set>

namespace fs = std::filesystem;

namespace attnlab::hub {
namespace {

constexpr size_t kMaxSmallBody = 16u << 20;    // the file list (?blobs=true) of a repository of 50,000 files fits
constexpr long kSmallRequestDeadline_s = 300;  // a file list or a HEAD, whatever its rate
constexpr int kMaxRedirects = 10;

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t\r\n");
    return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// scheme, host and port of `url` (the port defaulted), or nothing when curl cannot parse it.
struct Origin {
    std::string scheme, host, port;
    bool operator==(const Origin& o) const { return scheme == o.scheme && host == o.host && port == o.port; }
};

std::optional<Origin> originOf(const std::string& url) {
    CURLU* u = curl_url();
    if (!u) return std::nullopt;
    std::optional<Origin> origin;
    if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
        Origin o;
        for (auto [part, out] : {std::pair{CURLUPART_SCHEME, &o.scheme}, {CURLUPART_HOST, &o.host}}) {
            char* value = nullptr;
            if (curl_url_get(u, part, &value, 0) == CURLUE_OK) *out = lower(value);
            curl_free(value);
        }
        char* port = nullptr;
        if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) o.port = port;
        curl_free(port);
        origin = o;
    }
    curl_url_cleanup(u);
    return origin;
}

std::string hostOf(const std::string& url) {
    const std::optional<Origin> o = originOf(url);
    return o ? o->host : url;
}

}  // namespace

std::string urlEncode(const std::string& s, bool keep_slash) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    for (const unsigned char c : s) {
        if (std::isalnum(c) || c == '.' || c == '_' || c == '~' || c == '-' || (keep_slash && c == '/')) {
            out += char(c);
        } else {
            out += {'%', digits[c >> 4], digits[c & 15]};
        }
    }
    return out;
}

// One request: HEAD or GET of `url`, redirects not followed (HubClient follows them itself).
struct HubClient::Request {
    std::string url;
    bool head = false;
    int64_t resume_from = 0;  // > 0: "Range: bytes=N-"
    // The body of a 200 or 206 goes here (any other status's body to HttpResponse::body); it
    // receives the status; it may throw (the transfer is stopped and the exception rethrown).
    std::function<void(const HttpResponse& response, const char* data, size_t size)> sink;
    std::function<bool()> tick;  // false cancels
    long deadline_s = 0;         // > 0: the whole request within this many seconds (CURLOPT_TIMEOUT)
};

namespace {

// What curl's callbacks share with perform().
struct Transfer {
    const std::function<void(const HttpResponse&, const char*, size_t)>* sink = nullptr;
    const std::function<bool()>* tick = nullptr;
    HttpResponse* response = nullptr;
    std::exception_ptr error;  // thrown by the sink or the tick: never across curl's C frames
    bool cancelled = false;
    // The rate over each window of `window_s` seconds (bytes received in it, not curl's rolling estimate, which
    // a burst every minute keeps above any limit): below `min_rate`, the transfer is abandoned (too_slow).
    long min_rate = 0, window_s = 0;
    std::chrono::steady_clock::time_point window_start = std::chrono::steady_clock::now();
    curl_off_t window_bytes = 0;
    bool too_slow = false;
};

// Whether the window that just ended moved fewer bytes than its rate asks; starts the next window.
bool windowTooSlow(Transfer& t, curl_off_t received) {
    if (t.min_rate <= 0 || t.window_s <= 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now - t.window_start < std::chrono::seconds(t.window_s)) return false;
    const bool slow = received - t.window_bytes < curl_off_t(t.min_rate) * t.window_s;
    t.window_start = now;
    t.window_bytes = received;
    return slow;
}

size_t onHeader(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue): its headers only
        t->response->headers.clear();
        const size_t space = line.find(' ');
        t->response->status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
        t->response->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    }
    return size * count;
}

size_t onBody(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t bytes = size * count;
    const long status = t->response->status;
    try {
        if ((status == 200 || status == 206) && *t->sink) {
            (*t->sink)(*t->response, data, bytes);
        } else if (t->response->body.size() + bytes <= kMaxSmallBody) {
            t->response->body.append(data, bytes);
        } else {
            throw PackageError("the hub's answer is larger than 16 MB");
        }
    } catch (...) {
        t->error = std::current_exception();
        return 0;  // curl stops with CURLE_WRITE_ERROR; perform() rethrows
    }
    return bytes;
}

int onProgress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    if (windowTooSlow(*t, received)) {
        t->too_slow = true;
        return 1;
    }
    if (!*t->tick) return 0;
    try {
        if ((*t->tick)()) return 0;
        t->cancelled = true;
    } catch (...) {
        t->error = std::current_exception();
    }
    return 1;  // CURLE_ABORTED_BY_CALLBACK
}

void globalInit() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

HubClient::HubClient(const HubOptions& options)
    : m_endpoint(options.endpoint),
      m_token(options.token),
      m_connect_timeout_s(options.connect_timeout_s),
      m_min_bytes_per_second(options.min_bytes_per_second),
      m_slow_window_s(options.slow_window_s) {
    while (!m_endpoint.empty() && m_endpoint.back() == '/') m_endpoint.pop_back();
    globalInit();
    m_curl = curl_easy_init();
    if (!m_curl) throw InternalError("libcurl could not make a handle");
}

HubClient::~HubClient() { curl_easy_cleanup(m_curl); }

bool HubClient::sameOriginAsEndpoint(const std::string& url) const {
    const std::optional<Origin> a = originOf(url), b = originOf(m_endpoint);
    return a && b && *a == *b;
}

// The options every request has; the token only for the endpoint's own origin.
HttpResponse HubClient::perform(const Request& request) {
    HttpResponse response;
    response.url = request.url;
    Transfer t;
    t.sink = &request.sink;
    t.tick = &request.tick;
    t.response = &response;
    CURL* c = m_curl;
    curl_easy_reset(c);  // connections stay cached; options start from the defaults
    char error[CURL_ERROR_SIZE] = "";
    const std::string agent = std::string("attnlab/") + version();
    curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM from the resolver: other threads run
    curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, m_connect_timeout_s);
    // slower than the rate over a window: abandoned by onProgress (what arrived is kept); whatever the
    // setting, a transfer that moves nothing for ten minutes is abandoned by curl
    t.min_rate = m_min_bytes_per_second;
    t.window_s = m_slow_window_s;
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 600L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, request.deadline_s);
    curl_easy_setopt(c, CURLOPT_NOBODY, request.head ? 1L : 0L);
    // CURLOPT_RANGE, not RESUME_FROM: curl then lets a 200 (a server ignoring the range) through
    // to the sink, which starts the file over, instead of failing the transfer
    const std::string range = std::to_string(request.resume_from) + "-";
    if (request.resume_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
    curl_slist* headers = nullptr;
    const std::string auth = "Authorization: Bearer " + m_token;
    if (!m_token.empty() && sameOriginAsEndpoint(request.url)) headers = curl_slist_append(headers, auth.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    const CURLcode code = curl_easy_perform(c);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);  // the handle outlives both
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
    curl_slist_free_all(headers);
    if (t.error) std::rethrow_exception(t.error);
    if (t.cancelled) throw CancelledError();
    response.curl_code = t.too_slow ? CURLE_OPERATION_TIMEDOUT : code;
    response.curl_error = error[0] ? error : curl_easy_strerror(code);
    if (code != CURLE_OK) response.curl_error = std::string(curl_easy_strerror(code)) + ": " + response.curl_error;
    if (t.too_slow)
        response.curl_error = "slower than " + byteSizeText(m_min_bytes_per_second) + "/s for " +
                              std::to_string(m_slow_window_s) + " s (ATTNLAB_HUB_MIN_RATE, ATTNLAB_HUB_SLOW_WINDOW)";
    char* redirect = nullptr;
    if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect) response.redirect = redirect;
    return response;
}

HttpResponse HubClient::performFollowing(Request request, const std::function<bool(const HttpResponse&)>& follow) {
    for (int hops = 0;; ++hops) {
        HttpResponse r = perform(request);
        const bool redirected = r.curl_code == 0 && r.status >= 300 && r.status < 400 && !r.redirect.empty();
        if (!redirected || !follow(r)) return r;
        if (hops == kMaxRedirects) throw PackageError("more than 10 redirects from " + request.url);
        request.url = r.redirect;
    }
}

namespace {

std::string header(const HttpResponse& r, const std::string& name) {
    const auto it = r.headers.find(name);
    return it == r.headers.end() ? "" : it->second;
}

// No answer at all: the host is named with curl's reason (DNS, refused, TLS, timeout).
// `hub`: the hint names HF_HUB_OFFLINE (a download that is not the hub's has no cache to fall back on).
[[noreturn]] void throwTransport(const HttpResponse& r, const std::string& what, bool hub = true) {
    const std::string offline = hub ? "; with HF_HUB_OFFLINE=1 only the cache is used" : "";
    const std::string hint = r.curl_code == CURLE_OPERATION_TIMEDOUT
                                 ? " (the host answers too slowly" + offline + ")"
                                 : " (no network, or the host cannot be reached" + offline + ")";
    throw PackageError("cannot get " + what + " from " + hostOf(r.url) + ": " + r.curl_error + hint);
}

// a + b, at most INT64_MAX (sizes from a server: a sum must not wrap round below a cap).
int64_t saturatingSum(int64_t a, int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; }

int64_t sizeHeader(const std::string& value) {
    if (value.empty() || !std::all_of(value.begin(), value.end(), ::isdigit) || value.size() > 18) return -1;
    return std::stoll(value);
}

}  // namespace

// An HTTP error as its cause: a gated or private model (what to do about the token), an unknown
// repository, revision or file, or the status and the hub's own message.
void HubClient::throwStatus(const HttpResponse& r, const HubModelName& name, const std::string& what) const {
    const std::string code = header(r, "x-error-code"), host = hostOf(r.url), status = std::to_string(r.status);
    const bool token_sent = !m_token.empty() && sameOriginAsEndpoint(r.url);
    const std::string model = hubModelNameString(name);
    if ((r.status == 401 || r.status == 403) && token_sent) {
        throw PackageError(host + " refused the token for " + model + " (HTTP " + status + (code.empty() ? "" : ", ") +
                           code + "): check HF_TOKEN or run `huggingface-cli login` again; a gated model also needs " +
                           "its conditions accepted on its hub page by that account");
    }
    if (r.status == 401 || r.status == 403) {
        throw PackageError(model + " on " + host + " needs a token (HTTP " + status + (code.empty() ? "" : ", ") +
                           code + "): it is gated or private, or the name is wrong; set HF_TOKEN or run " +
                           "`huggingface-cli login` (a gated model's conditions must be accepted on its hub page)");
    }
    if (r.status == 404 && code == "RevisionNotFound") {
        throw PackageError(name.repo + " has no revision " + name.revision + " on " + host + " (HTTP 404)");
    }
    if (r.status == 404 && code == "EntryNotFound") {
        throw PackageError(name.repo + " has no file " + what + " on " + host + " (HTTP 404)");
    }
    if (r.status == 404) {
        throw PackageError("unknown repository " + name.repo + " (revision " + name.revision + ") on " + host +
                           " (HTTP 404): check the name, ORG/NAME as on its hub page");
    }
    const std::string message = util::forMessage(header(r, "x-error-message"));
    throw PackageError(host + " answered HTTP " + status + " for " + what + " of " + model +
                       (message.empty() ? "" : ": " + message));
}

RepoInfo HubClient::repoFiles(const HubModelName& name, const std::function<bool()>& tick) {
    Request request;
    request.tick = tick;
    request.deadline_s = kSmallRequestDeadline_s;
    // blobs=true: each file's size too (huggingface_hub's model_info(files_metadata=True))
    request.url =
        m_endpoint + "/api/models/" + name.repo + "/revision/" + urlEncode(name.revision, false) + "?blobs=true";
    const HttpResponse r = performFollowing(request, [](const HttpResponse&) { return true; });
    const std::string what = "the file list of " + hubModelNameString(name);
    if (r.curl_code) throwTransport(r, what);
    if (r.status != 200) throwStatus(r, name, "the file list");
    return parseRepoInfo(r.body, hostOf(r.url) + " sent " + what);
}

namespace {
// A listed size ("size", else "lfs"."size"): a non-negative integer that fits; -1 otherwise.
int64_t listedSize(const nlohmann::json& sibling) {
    const auto sizeIn = [](const nlohmann::json& o) -> int64_t {
        if (!o.is_object() || !o.contains("size") || !o["size"].is_number_unsigned()) return -1;  // (negative: signed)
        const uint64_t v = o["size"].get<uint64_t>();
        return v <= uint64_t(INT64_MAX) ? int64_t(v) : -1;
    };
    const int64_t own = sizeIn(sibling);
    return own >= 0 || !sibling.contains("lfs") ? own : sizeIn(sibling["lfs"]);
}

// cardData.license (a string, or a list whose first string counts), else the first "license:X" tag.
std::string listedLicence(const nlohmann::json& info) {
    if (info.contains("cardData") && info["cardData"].is_object() && info["cardData"].contains("license")) {
        const nlohmann::json& l = info["cardData"]["license"];
        if (l.is_string()) return l.get<std::string>();
        if (l.is_array() && !l.empty() && l[0].is_string()) return l[0].get<std::string>();
    }
    if (info.contains("tags") && info["tags"].is_array())
        for (const nlohmann::json& tag : info["tags"])
            if (tag.is_string() && tag.get<std::string>().rfind("license:", 0) == 0)
                return tag.get<std::string>().substr(8);
    return "";
}
}  // namespace

RepoInfo parseRepoInfo(const std::string& body, const std::string& origin) {
    const nlohmann::json info = nlohmann::json::parse(body, nullptr, false);
    if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() ||
        !isCommitHash(info["sha"].get<std::string>())) {
        throw PackageError(origin + " without a commit (\"sha\")");
    }
    RepoInfo out;
    out.commit = info["sha"].get<std::string>();
    const nlohmann::json siblings = info.value("siblings", nlohmann::json::array());
    if (!siblings.is_array()) throw PackageError(origin + " with \"siblings\" that is not a list");
    for (const nlohmann::json& sibling : siblings) {
        if (!sibling.is_object() || !sibling.contains("rfilename") || !sibling["rfilename"].is_string()) continue;
        const std::string file = sibling["rfilename"].get<std::string>();
        out.files.push_back(file);
        if (const int64_t size = listedSize(sibling); size >= 0) out.sizes[file] = size;
    }
    out.licence = listedLicence(info);
    return out;
}

HubFileInfo HubClient::fileInfo(const HubModelName& name, const std::string& commit, const std::string& file,
                                const std::function<bool()>& tick) {
    Request request;
    request.tick = tick;
    request.url = m_endpoint + "/" + name.repo + "/resolve/" + commit + "/" + urlEncode(file, true);
    request.head = true;
    request.deadline_s = kSmallRequestDeadline_s;
    // huggingface_hub follows a redirect within the hub (a renamed repository), not the one to the CDN
    const HttpResponse r = performFollowing(request, [this](const HttpResponse& x) {
        return !x.headers.count("x-linked-etag") && sameOriginAsEndpoint(x.redirect);
    });
    if (r.curl_code) throwTransport(r, file + " of " + hubModelNameString(name));
    const bool redirect = r.status >= 300 && r.status < 400 && !r.redirect.empty();
    if (r.status != 200 && !redirect) throwStatus(r, name, file);
    const std::string answered = header(r, "x-repo-commit");
    if (!answered.empty() && answered != commit) {
        throw PackageError(hostOf(r.url) + " answered " + file + " of " + name.repo + " at commit " +
                           util::forMessage(answered, 80) + ", not " + commit);
    }
    const std::string linked = header(r, "x-linked-etag");
    const std::optional<std::string> etag = normalizeEtag(linked.empty() ? header(r, "etag") : linked);
    if (!etag) throw PackageError(hostOf(r.url) + " sent no usable ETag for " + file + ": it cannot be cached");
    int64_t size = sizeHeader(header(r, "x-linked-size"));
    if (size < 0 && !redirect) size = sizeHeader(header(r, "content-length"));
    return {name, file, *etag, size, redirect ? r.redirect : r.url};
}

namespace {
// A 206 must continue where the partial file ends ("Content-Range: bytes START-END/TOTAL").
void checkContentRange(const HttpResponse& r, int64_t expected_start, const std::string& file) {
    const std::string range = header(r, "content-range");
    const size_t dash = range.find('-');
    const std::string start =
        range.rfind("bytes ", 0) == 0 && dash != std::string::npos ? range.substr(6, dash - 6) : "";
    if (sizeHeader(start) != expected_start) {
        throw PackageError(hostOf(r.url) + " answered the resumption of " + file + " at " +
                           std::to_string(expected_start) + " with \"Content-Range: " + util::forMessage(range) + "\"");
    }
}
}  // namespace

namespace {
// The body must not take the file past `max_size`: what the server declares for this answer (Content-Length,
// from `start`) is checked before a byte is written, what it sends as it comes.
void checkBodySize(const HttpResponse& r, int64_t start, int64_t on_disk, size_t arriving, int64_t max_size,
                   const UrlDownload& file) {
    const int64_t declared = sizeHeader(header(r, "content-length"));
    if (on_disk + int64_t(arriving) <= max_size && (declared < 0 || start + declared <= max_size)) return;
    const std::string bound = file.size >= 0 ? " has (its declared size)"
                                             : " may have (AttnLab's cap for a file of no declared size" +
                                                   (file.cap_setting.empty() ? "" : ", " + file.cap_setting) + ")";
    throw PackageError(hostOf(r.url) + " sent more than the " + std::to_string(max_size) + " bytes " + file.file +
                       bound + ": the download stopped there, and what this answer brought of it was not kept");
}
}  // namespace

void HubClient::download(const HubFileInfo& info, IncompleteBlob& blob, int64_t max_size,
                         const std::function<bool()>& tick) {
    transfer({info.location, info.file, info.size, ""}, blob, max_size, tick,
             {info.file + " of " + hubModelNameString(info.name), true},
             [&](const HttpResponse& r) { throwStatus(r, info.name, info.file); });
}

namespace {
// An HTTP error from a server that is not the hub: the host, the status and what was asked for.
[[noreturn]] void throwPlainStatus(const HttpResponse& r, const std::string& what) {
    throw PackageError(hostOf(r.url) + " answered HTTP " + std::to_string(r.status) + " for " + what + " (" +
                       util::forMessage(r.url, 200) + ")");
}
}  // namespace

void HubClient::downloadUrl(const UrlDownload& file, DownloadTarget& target, int64_t max_size,
                            const std::function<bool()>& tick) {
    transfer(file, target, max_size, tick, {file.file, false},
             [&](const HttpResponse& r) { throwPlainStatus(r, file.file); });
}

std::string HubClient::getSmall(const std::string& url, const std::string& what, size_t max_bytes,
                                const std::function<bool()>& tick) {
    Request request;
    request.url = url;
    request.tick = tick;
    request.deadline_s = kSmallRequestDeadline_s;
    std::string body;
    request.sink = [&](const HttpResponse& r, const char* data, size_t size) {
        const int64_t declared = sizeHeader(header(r, "content-length"));
        if (body.size() + size > max_bytes || declared > int64_t(max_bytes))
            throw PackageError(hostOf(r.url) + " sent more than " + byteSizeText(int64_t(max_bytes)) + " for " + what +
                               ", more than it can be");
        body.append(data, size);
    };
    const HttpResponse r = performFollowing(request, [](const HttpResponse&) { return true; });
    if (r.curl_code) throwTransport(r, what, /*hub=*/false);
    if (r.status != 200) throwPlainStatus(r, what);
    return body;
}

void HubClient::transfer(const UrlDownload& file, DownloadTarget& target, int64_t max_size,
                         const std::function<bool()>& tick, const TransferSource& source,
                         const std::function<void(const HttpResponse&)>& status) {
    Request request;
    request.url = file.url;
    request.tick = tick;
    bool first = true;
    request.sink = [&](const HttpResponse& r, const char* data, size_t size) {
        if (first && r.status == 206) checkContentRange(r, request.resume_from, file.file);
        if (first && r.status == 200 && request.resume_from > 0) target.restart();  // the range was ignored
        first = false;
        try {
            checkBodySize(r, r.status == 206 ? request.resume_from : 0, target.size(), size, max_size, file);
        } catch (const PackageError&) {
            target.discard();  // what this call wrote of it goes: the server is not to be trusted with this file
            throw;
        }
        target.write(data, size);
    };
    for (int hops = 0, restarts = 0;; ++hops) {
        request.resume_from = target.size();
        first = true;
        const int64_t before = target.size();
        const auto began = std::chrono::steady_clock::now();
        const HttpResponse r = perform(request);
        if (r.status == 0 && r.curl_code) throwTransport(r, source.what, source.hub);
        if (r.curl_code == CURLE_OPERATION_TIMEDOUT)
            throwTooSlow(r, file, target.size(), target.size() - before, began);
        if (r.curl_code) {
            throw PackageError("the download of " + file.file + " from " + hostOf(r.url) + " stopped (" + r.curl_error +
                               "): " + std::to_string(target.size()) + " of " + std::to_string(file.size) +
                               " bytes are kept; run again to resume");
        }
        if (r.status >= 300 && r.status < 400 && !r.redirect.empty() && hops < kMaxRedirects) {
            request.url = r.redirect;  // the Authorization header only where it is the endpoint
            continue;
        }
        if (r.status == 416 && target.size() == file.size) return;  // all there already: the caller checks it
        if (r.status == 416 && restarts++ == 0) {
            target.restart();  // more bytes than the file has: not this file's start; fetch it whole
            continue;
        }
        if (r.status != 200 && r.status != 206) status(r);
        return;
    }
}

// A transfer slower than the options' rate over their window: the host, the rate it kept up, what is kept.
void HubClient::throwTooSlow(const HttpResponse& r, const UrlDownload& info, int64_t kept, int64_t got,
                             std::chrono::steady_clock::time_point began) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const std::string rate = byteSizeText(int64_t(seconds > 0 ? double(got) / seconds : 0));
    throw PackageError("the download of " + info.file + " from " + hostOf(r.url) + " was slower than " +
                       byteSizeText(m_min_bytes_per_second) + "/s for " + std::to_string(m_slow_window_s) + " s (" +
                       rate + "/s on average over " + std::to_string(int64_t(seconds)) +
                       " s): " + std::to_string(kept) + " of " + std::to_string(info.size) +
                       " bytes are kept; run again to resume (ATTNLAB_HUB_MIN_RATE and ATTNLAB_HUB_SLOW_WINDOW set "
                       "the limit)");
}

namespace {

// Fetches a snapshot's files into blobs/, then makes its links and its ref.
class SnapshotFetcher {
public:
    SnapshotFetcher(const HubModelName& name, const HubOptions& options, const HubProgressCallback& progress)
        : m_name(name),
          m_options(options),
          m_cache(options.cache_dir, name.repo),
          m_client(options),
          m_progress(progress) {}
    std::string run();

private:
    void plan(const std::vector<std::string>& files);
    void checkCaps(const std::vector<std::string>& files, const std::string& stage) const;
    void fetchPlanned(bool indexes_only);
    void fetchOne(const HubFileInfo& info);
    std::vector<std::string> shardsToGet(const std::vector<std::string>& chosen);
    std::string readBlob(const std::string& file) const;
    HubModelName m_name;
    HubOptions m_options;
    RepoCache m_cache;
    HubClient m_client;
    ProgressTracker m_progress;
    RepoInfo m_listing;
    int64_t m_planned_bytes = 0;                 // the declared sizes of the files planned
    std::map<std::string, std::string> m_etags;  // file -> its blob's name, for the links
    std::vector<HubFileInfo> m_pending;          // files not yet in blobs/
};

// The caps of HubOptions against the files, their listed sizes and the bytes planned so far, before the first
// byte of them.
void checkCaps(const HubModelName& name, const HubOptions& options, const std::vector<std::string>& files,
               const std::map<std::string, int64_t>& sizes, int64_t planned, const std::string& stage) {
    const std::string model = hubModelNameString(name);
    if (int64_t(files.size()) > options.max_files)
        throw PackageError(model + ": " + stage + " names " + std::to_string(files.size()) +
                           " files to get, more than AttnLab's cap of " + std::to_string(options.max_files) +
                           " for one model (ATTNLAB_HUB_MAX_FILES); nothing more was downloaded");
    int64_t listed = 0;
    for (const std::string& f : files)
        if (const auto it = sizes.find(f); it != sizes.end()) listed = saturatingSum(listed, it->second);
    if (std::max(listed, planned) > options.max_total_bytes)
        throw PackageError(model + ": " + stage + " comes to " + byteSizeText(std::max(listed, planned)) +
                           ", more than AttnLab's cap of " + byteSizeText(options.max_total_bytes) +
                           " for one model (ATTNLAB_HUB_MAX_BYTES); nothing more was downloaded");
}

// The files a model cannot do without, checked before anything is fetched.
void requireModelFiles(const HubModelName& name, const std::vector<std::string>& chosen,
                       const std::vector<std::string>& all) {
    const bool config = std::count(chosen.begin(), chosen.end(), "config.json") > 0;
    const bool weights = std::any_of(chosen.begin(), chosen.end(), [](const std::string& f) {
        return std::count(weightFiles().begin(), weightFiles().end(), f) > 0;
    });
    if (config && weights) return;
    std::string listing;
    for (size_t i = 0; i < all.size() && i < 20; ++i) listing += (i ? ", " : "") + util::forMessage(all[i]);
    if (all.size() > 20) listing += ", …";
    throw PackageError(hubModelNameString(name) + " has no " + (config ? "" : "config.json") +
                       (config || weights ? "" : " and no ") +
                       (weights ? "" : "weights AttnLab reads (model.safetensors, pytorch_model.bin, model.bin)") +
                       "; its files: " + (listing.empty() ? "none" : listing));
}

}  // namespace

void SnapshotFetcher::checkCaps(const std::vector<std::string>& files, const std::string& stage) const {
    hub::checkCaps(m_name, m_options, files, m_listing.sizes, m_planned_bytes, stage);
}

void SnapshotFetcher::plan(const std::vector<std::string>& files) {
    std::error_code ec;
    for (const std::string& file : files) {
        // a commit's files never change: one already in its snapshot is not asked about again
        if (fs::is_regular_file(m_cache.snapshotDir(m_listing.commit) + "/" + file, ec)) continue;
        if (!m_progress.poll()) throw CancelledError();
        HubFileInfo info = m_client.fileInfo(m_name, m_listing.commit, file, [this] { return m_progress.poll(); });
        const auto listed = m_listing.sizes.find(file);
        if (listed != m_listing.sizes.end() && info.size >= 0 && info.size != listed->second)
            throw PackageError(hubModelNameString(m_name) + ": " + file + " is " + std::to_string(info.size) +
                               " bytes by its headers but " + std::to_string(listed->second) +
                               " by the file list: the hub's answers disagree; nothing was downloaded of it");
        if (info.size < 0 && listed != m_listing.sizes.end()) info.size = listed->second;
        if (info.size < 0)  // (the hub always says: X-Linked-Size, Content-Length, the listing's size)
            throw PackageError(hostOf(info.location) + " declares no size for " + file + " of " +
                               hubModelNameString(m_name) + ": AttnLab gets only files of a known size");
        if (isWeightsIndex(file) && info.size > int64_t(package::kMaxWeightsIndexBytes))
            throw PackageError(hubModelNameString(m_name) + ": " + file + " is " + byteSizeText(info.size) +
                               ", larger than a weights index may be (" +
                               byteSizeText(int64_t(package::kMaxWeightsIndexBytes)) + ")");
        m_etags[file] = info.etag;
        if (fs::is_regular_file(m_cache.blobPath(info.etag), ec)) continue;
        const bool pending =
            std::any_of(m_pending.begin(), m_pending.end(), [&](const HubFileInfo& p) { return p.etag == info.etag; });
        if (pending) continue;  // the same bytes under two names (source.spm = target.spm): one blob
        m_planned_bytes = saturatingSum(m_planned_bytes, info.size);
        checkCaps(files, "its files' declared sizes");
        m_progress.addFile(info.size);
        m_pending.push_back(info);
    }
}

void SnapshotFetcher::fetchPlanned(bool indexes_only) {
    std::vector<HubFileInfo> later;
    for (const HubFileInfo& info : m_pending) {
        if (indexes_only && !isWeightsIndex(info.file))
            later.push_back(info);
        else
            fetchOne(info);
    }
    m_pending = later;
}

void SnapshotFetcher::fetchOne(const HubFileInfo& info) {
    const auto go_on = [this] { return m_progress.poll(); };
    const BlobLock lock(m_cache, info.etag, go_on);
    if (!m_progress.notify(lock.notice())) throw CancelledError();
    std::error_code ec;
    if (fs::is_regular_file(m_cache.blobPath(info.etag), ec)) {  // another process finished it meanwhile
        if (!m_progress.startFile(info.file, info.size, std::max<int64_t>(info.size, 0)) || !m_progress.endFile()) {
            throw CancelledError();
        }
        return;
    }
    IncompleteBlob blob(m_cache, info.etag, isSha256Hex(info.etag), go_on);
    if (!m_progress.notify(blob.notice()) || !m_progress.startFile(info.file, info.size, blob.size()))
        throw CancelledError();
    // Asked again just before its bytes: the CDN's link is good for a while only, and the files of a large
    // model come one after the other (huggingface_hub does the same).
    HubFileInfo fresh = m_client.fileInfo(m_name, m_listing.commit, info.file, go_on);
    if (fresh.etag != info.etag || (fresh.size >= 0 && fresh.size != info.size))
        throw PackageError(info.file + " of " + hubModelNameString(m_name) + " changed while it was being got (ETag " +
                           info.etag + ", now " + fresh.etag + "; " + std::to_string(info.size) + " bytes, now " +
                           std::to_string(fresh.size) + "): run again");
    m_client.download(fresh, blob, info.size, [&] { return m_progress.update(blob.size(), false); });  // never more
    blob.finish(info.file, info.size);
    if (!m_progress.endFile()) throw CancelledError();  // this file stays complete in blobs/
}

std::string SnapshotFetcher::readBlob(const std::string& file) const {
    const auto it = m_etags.find(file);
    const std::string path =
        it != m_etags.end() ? m_cache.blobPath(it->second) : m_cache.snapshotDir(m_listing.commit) + "/" + file;
    return util::readSmallFile(path, package::kMaxWeightsIndexBytes);  // (only indexes are read)
}

// The shards the chosen weights index names, counted against the caps with the rest first, then each checked to
// be a file the repository lists.
std::vector<std::string> SnapshotFetcher::shardsToGet(const std::vector<std::string>& chosen) {
    std::vector<std::string> all = chosen;
    for (const std::string& index : chosen)
        if (isWeightsIndex(index))
            for (std::string& shard : shardsOfIndex(readBlob(index), index)) all.push_back(std::move(shard));
    checkCaps(all, "its weights index");
    const std::unordered_set<std::string> listed(m_listing.files.begin(), m_listing.files.end());
    for (size_t i = chosen.size(); i < all.size(); ++i)
        if (!listed.count(all[i]))
            throw PackageError("the weights index of " + hubModelNameString(m_name) + " names " +
                               util::forMessage(all[i]) + ", which the repository does not have");
    return {all.begin() + std::ptrdiff_t(chosen.size()), all.end()};
}

std::string SnapshotFetcher::run() {
    m_listing = m_client.repoFiles(m_name, [this] { return m_progress.poll(); });
    const std::vector<std::string> chosen = selectModelFiles(m_listing.files);
    requireModelFiles(m_name, chosen, m_listing.files);
    checkCaps(chosen, "its file list");
    plan(chosen);
    // A weights index first (a few kB): its shards are planned before the first byte of the rest, so that the
    // progress's totals hold from the start.
    fetchPlanned(/*indexes_only=*/true);
    plan(shardsToGet(chosen));
    fetchPlanned(/*indexes_only=*/false);
    // every file is complete: now the snapshot's links, and the ref last (readers go by the ref)
    for (const auto& [file, etag] : m_etags) m_cache.linkSnapshotFile(m_listing.commit, file, etag);
    if (m_name.revision != m_listing.commit) m_cache.writeRef(m_name.revision, m_listing.commit);
    return m_cache.snapshotDir(m_listing.commit);
}

namespace {
[[noreturn]] void throwOffline(const HubModelName& name, const HubOptions& options) {
    const RepoCache cache(options.cache_dir, name.repo);
    const std::optional<std::string> commit = cache.commitFor(name.revision);
    // without a commit there is no snapshot: a folder that does not exist lacks everything
    const std::vector<std::string> missing =
        missingFromSnapshot(commit ? cache.snapshotDir(*commit) : cache.refPath(name.revision));
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw PackageError(hubModelNameString(name) + " is not in the Hugging Face cache " + options.cache_dir +
                       " and HF_HUB_OFFLINE is set (no network): missing " + list +
                       (commit ? "" : " (no " + repoFolderName(name.repo) + "/refs/" + name.revision + ")"));
}

}  // namespace
}  // namespace attnlab::hub

namespace attnlab {

std::string hubSnapshot(const HubModelName& name, const HubOptions& options, const HubProgressCallback& progress) {
    // a name made by hand (not by parseHubModelName) must not lead outside the cache
    if (!parseHubModelName(name.repo + "@" + name.revision)) {
        throw InputError("not a Hugging Face model name: " + name.repo + "@" + name.revision);
    }
    // an empty folder would put the cache at the root of the file system
    if (options.cache_dir.empty()) throw ConfigError("no Hugging Face cache folder given (HubOptions::cache_dir)");
    if (std::optional<std::string> cached = cachedHubSnapshot(name, options)) return *cached;
    if (options.offline) hub::throwOffline(name, options);
    return hub::SnapshotFetcher(name, options, progress).run();
}

namespace {
// What an index will name, before it is read: the listed shards of its format ("model-00001-of-00002.safetensors").
std::vector<std::string> listedShards(const std::string& index, const std::vector<std::string>& files) {
    const std::string base = index.substr(0, index.size() - std::string(".index.json").size());  // model.safetensors
    const std::string stem = base.substr(0, base.rfind('.')), extension = base.substr(base.rfind('.'));
    std::vector<std::string> shards;
    for (const std::string& f : files)
        if (f.rfind(stem + "-", 0) == 0 && f.find("-of-") != std::string::npos && f.size() > extension.size() &&
            f.compare(f.size() - extension.size(), extension.size(), extension) == 0 &&
            f.find('/') == std::string::npos)
            shards.push_back(f);
    return shards;
}
}  // namespace

HubModelListing hubModelListing(const HubModelName& name, const HubOptions& options,
                                const std::function<bool()>& keep_going) {
    if (!parseHubModelName(name.repo + "@" + name.revision))
        throw InputError("not a Hugging Face model name: " + util::forMessage(name.repo + "@" + name.revision));
    if (options.offline)
        throw PackageError(hubModelNameString(name) +
                           ": HF_HUB_OFFLINE is set (no network): the hub cannot be asked "
                           "about it");
    hub::HubClient client(options);
    const hub::RepoInfo info = client.repoFiles(name, keep_going);
    HubModelListing out;
    out.name = name;
    out.commit = info.commit;
    out.licence = util::forMessage(info.licence, 80);
    out.files = hub::selectModelFiles(info.files);
    hub::requireModelFiles(name, out.files, info.files);
    for (const std::string& f : std::vector<std::string>(out.files))
        if (hub::isWeightsIndex(f))
            for (std::string& shard : listedShards(f, info.files)) out.files.push_back(std::move(shard));
    hub::checkCaps(name, options, out.files, info.sizes, 0, "its file list");
    out.total_bytes = 0;
    const hub::RepoCache cache(options.cache_dir, name.repo);
    std::error_code ec;
    for (const std::string& f : out.files) {
        const auto size = info.sizes.find(f);
        if (size == info.sizes.end()) {
            out.total_bytes = -1;
            continue;
        }
        if (out.total_bytes >= 0) out.total_bytes += size->second;
        if (fs::is_regular_file(cache.snapshotDir(info.commit) + "/" + f, ec)) out.cached_bytes += size->second;
    }
    return out;
}

}  // namespace attnlab
