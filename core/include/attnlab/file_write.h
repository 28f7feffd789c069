#pragma once
// Writing what a user named: the one way AttnLab writes a file (core, the CLI and the app's exports).
#include <string>

namespace attnlab {

// Writes `bytes` to the file `path` names, as the user would expect of any program:
// - a new path or a regular file: a new file is written beside it (a hidden name of AttnLab's own,
//   created exclusively, so no user file is ever overwritten), flushed, synced and renamed over it,
//   so a crash leaves the old content or the new one; an existing file keeps its permissions;
// - a symbolic link: written through to its target (followed link by link, up to 40), atomically
//   there; the link stays a link;
// - a character or block device or a FIFO: written to directly (a FIFO no process reads is an
//   error, never a wait), and its errors reported (/dev/full fails);
// - a folder or a socket: refused.
// Throws InputError naming the path and the real cause: a folder that does not exist, one that is
// not writable (even when the file itself is), a full disk ("No space left on device"), the
// system's words for anything else.
void saveToFile(const std::string& path, const std::string& bytes);

}  // namespace attnlab
