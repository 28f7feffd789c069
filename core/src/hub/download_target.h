#pragma once
// Where a download's bytes go (HubClient::download, HubClient::downloadUrl): a partial file that is
// appended to, resumed from its size, emptied when a server ignores the range, and whose bytes from
// this call are discarded when the server cannot be trusted with it. IncompleteBlob (hub_cache.h) is one.
#include <cstddef>
#include <cstdint>

namespace attnlab::hub {

class DownloadTarget {
public:
    virtual ~DownloadTarget() = default;
    virtual int64_t size() const = 0;  // bytes on disk: the next request resumes there
    virtual void restart() = 0;        // empties it (a 200 answered a Range request)
    virtual void write(const char* data, size_t bytes) = 0;
    virtual void discard() = 0;  // what this call wrote goes
};

}  // namespace attnlab::hub
